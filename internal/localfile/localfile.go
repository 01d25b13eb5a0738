// Package localfile decides which local files a plan (or a converted curl
// command) may read and then send to a target. A plan is code: one from an
// untrusted pull request, run in CI, could name /proc/self/environ or
// ../../.ssh/id_rsa in body_file and send the runner's secrets away. So a
// file is read only from the directories the user vouched for (the plan's
// own, --data-dir, --allow-files), and never from the kernel's trees.
package localfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// systemTrees hold the kernel's views of processes and devices: files
// there are not data, and /proc/self/environ holds every secret of the
// process's environment.
var systemTrees = []string{"/proc", "/sys", "/dev"}

// AllowFlag names the command-line flag that vouches for more directories,
// for the messages that suggest it.
const AllowFlag = "--allow-files"

// Resolve returns the path to read for path (absolute, symbolic links
// followed) when it lies inside one of roots, and an error saying why not
// otherwise. With no roots only the system trees are refused. A path that
// does not exist yet is returned as is, for the open to report.
func Resolve(path string, roots []string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			real = abs
		} else {
			return "", err
		}
	}
	for _, p := range []string{abs, real} {
		for _, t := range systemTrees {
			if within(p, t) {
				return "", fmt.Errorf("%s is in %s, which holds the system's process and device views, not data: it is never read", path, t)
			}
		}
	}
	if len(roots) == 0 {
		return real, nil
	}
	dirs := make([]string, len(roots))
	for i, r := range roots {
		dirs[i] = realDir(r)
		if within(real, dirs[i]) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%s is outside %s: only files there are read, so that a plan cannot send other files of this machine; to allow a directory, pass %s DIR",
		path, strings.Join(dirs, ", "), AllowFlag)
}

// realDir is dir as Resolve compares paths: absolute, links followed.
func realDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return false
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
