package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseScriptOneTarget runs scripts/release.sh for this machine's
// platform only (the six-target build is the releaser's, too slow for
// every CI run): the archive's checksum is the one in SHA256SUMS, and the
// binary in it says the version it was given and validates the
// quickstart.
func TestReleaseScriptOneTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the script is bash")
	}
	const version = "9.8.7-test"
	dist := filepath.Join(t.TempDir(), "dist")
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("bash", "scripts/release.sh", version, dist)
	cmd.Dir = "../.."
	// The toolchain running this test, not whichever go is first on PATH.
	cmd.Env = append(os.Environ(), "RELEASE_TARGETS="+target,
		"PATH="+filepath.Join(runtime.GOROOT(), "bin")+string(os.PathListSeparator)+os.Getenv("PATH")) //nolint:staticcheck // GOROOT of the toolchain running this test
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	name := "stampede_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	archive := filepath.Join(dist, name+".tar.gz")
	checkSums(t, dist, map[string]string{name + ".tar.gz": archive})
	unpacked := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", archive, "-C", unpacked).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	bin := filepath.Join(unpacked, name, "stampede")
	if v, err := exec.Command(bin, "--version").Output(); err != nil || string(v) != "stampede "+version+"\n" {
		t.Errorf("--version = %q, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(unpacked, name, "LICENSE")); err != nil {
		t.Errorf("archive lacks the LICENSE: %v", err)
	}
	if b, err := exec.Command(bin, "validate", "../../examples/quickstart.yaml").CombinedOutput(); err != nil {
		t.Errorf("validate quickstart: %v\n%s", err, b)
	}
}

// checkSums reads SHA256SUMS in dist: exactly the files in want, each
// with its content's digest.
func checkSums(t *testing.T, dist string, want map[string]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		path, known := want[file]
		if !ok || !known {
			t.Errorf("SHA256SUMS line %q: not an archive of this build", sc.Text())
			continue
		}
		listed++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := sha256.Sum256(b); hex.EncodeToString(d[:]) != sum {
			t.Errorf("%s: SHA256SUMS says %s, the file is %x", file, sum, d)
		}
	}
	if listed != len(want) {
		t.Errorf("SHA256SUMS lists %d archives, want %d", listed, len(want))
	}
}
