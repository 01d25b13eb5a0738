package result

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// A run killed outright (kill -9, a crash) leaves its spare files beside
// the result; the next run for the same result removes them, and leaves
// alone those of a process that still runs and those of other results.
func TestOpenRemovesSparesOfDeadRuns(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no cheap liveness check: spares are kept")
	}
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	// The name the spares of a run killed at once would have had.
	spare := func(name string, pid int) string {
		p := filepath.Join(dir, fmt.Sprintf(".%s.tmp-p%d-12345", name, pid))
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := spare("r.json", dead.Process.Pid)
	live := spare("r.json", os.Getppid())
	other := spare("other.json", dead.Process.Pid)
	o, err := Open(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the spare of a dead run is still there (%v)", err)
	}
	for _, p := range []string{live, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(p), err)
		}
	}
	// Its own spares are named so the next run can find them.
	entries, _ := os.ReadDir(dir)
	own := 0
	for _, e := range entries {
		if n := e.Name(); len(n) > 0 && n != filepath.Base(live) && n != filepath.Base(other) {
			if want := fmt.Sprintf(".r.json.tmp-p%d-", os.Getpid()); len(n) < len(want) || n[:len(want)] != want {
				t.Errorf("spare %q, want it named %s*", n, want)
			}
			own++
		}
	}
	if own == 0 {
		t.Error("Open set no spare aside")
	}
	o.Close()
}
