package localfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	root := t.TempDir()
	other := t.TempDir()
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(other, "out.txt"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(other, "out.txt"), filepath.Join(root, "link.txt"))
	os.Mkdir(filepath.Join(root, "..data"), 0o755) // a ConfigMap volume's layout
	os.WriteFile(filepath.Join(root, "..data", "p.csv"), []byte("x"), 0o644)
	for _, c := range []struct {
		path  string
		roots []string
		ok    bool
	}{
		{filepath.Join(root, "in.txt"), []string{root}, true},
		{filepath.Join(root, "..data", "p.csv"), []string{root}, true},
		{filepath.Join(root, "missing.txt"), []string{root}, true}, // for the open to report
		{filepath.Join(other, "out.txt"), []string{root}, false},
		{filepath.Join(root, "..", filepath.Base(other), "out.txt"), []string{root}, false},
		{filepath.Join(root, "link.txt"), []string{root}, false},
		{filepath.Join(root, "link.txt"), []string{root, other}, true},
		{"/proc/self/environ", []string{"/"}, false},
		{"/proc/self/environ", nil, false},
		{"/dev/null", []string{"/"}, false},
		{"/sys/kernel", nil, false},
		{"/procfoo/x", nil, true},
	} {
		_, err := Resolve(c.path, c.roots)
		if (err == nil) != c.ok {
			t.Errorf("Resolve(%s, %v): %v, want ok=%v", c.path, c.roots, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "/proc") && !strings.Contains(err.Error(), "/dev") && !strings.Contains(err.Error(), "/sys") && !strings.Contains(err.Error(), AllowFlag) {
			t.Errorf("Resolve(%s): %v does not say what to do", c.path, err)
		}
	}
}
