//go:build unix

package e2etest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// buildFlags are the Dockerfile's: the end-to-end tests exercise the binary
// the image ships (static, pure-Go resolver), and cmd/stampede's Dockerfile
// test then finds every package already compiled with these settings and
// only links.
var buildFlags = []string{"-trimpath"}

// sharedBinary returns a stampede binary built from the module's current
// sources. Every e2e package of one `go test ./...` asks for it at about the
// same time; the first builds it and the others wait on a file lock and
// reuse it, so the binary is built once per change of the sources, not once
// per package (each build links ~100 MB and, on a busy 2-core machine,
// takes minutes).
func sharedBinary(root string) (string, error) {
	key, err := sourceKey(root)
	if err != nil {
		return "", fmt.Errorf("hashing the module's sources: %v", err)
	}
	cache := filepath.Join(os.TempDir(), "stampede-e2e-bin")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %v", lock.Name(), err)
	}
	// Closing the lock file releases the lock too, so a failed unlock
	// cannot hold the next build up.
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	bin := filepath.Join(cache, key, "stampede")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	pruneOld(cache, key)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp := bin + ".building"
	args := append([]string{"build", "-o", tmp}, buildFlags...)
	if race() {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/stampede")
	// Generous: the first build on a loaded machine compiles everything.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if !race() {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, os.Rename(tmp, bin)
}

func race() bool { return os.Getenv("STAMPEDE_E2E_RACE") != "" }

// sourceKey hashes every file that can change the binary: all non-test
// files of the module (Go sources, embedded assets, go.mod and go.sum),
// by path and content, plus the build settings and the Go version.
func sourceKey(root string) (string, error) {
	h := sha256.New()
	// The toolchain too: the binary is built by the go on PATH, which is
	// normally the one running the tests.
	fmt.Fprintf(h, "flags %v race %v go %s\n", buildFlags, race(), runtime.Version())
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || strings.HasPrefix(name, "e2e")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\n", rel)
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// pruneOld removes binaries built from older sources a day ago or more, so
// a developer's temp directory does not fill with one per edit.
func pruneOld(cache, keep string) {
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(cache, e.Name()))
		}
	}
}
