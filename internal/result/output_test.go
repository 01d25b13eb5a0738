//go:build linux

package result

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// small is a consistent result of one step with n successful requests.
func small(t *testing.T, n int64, partial bool) *Result {
	t.Helper()
	h := NewHistogram()
	for i := int64(0); i < n; i++ {
		h.RecordValue(1000 + i)
	}
	lat := LatencyOf(h)
	r := &Result{
		Schema: Schema,
		Run:    RunInfo{Model: "closed", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationS: 1, Partial: partial},
		Totals: Totals{Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat},
		Steps:  []Step{{Scenario: "s", Name: "GET /", Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat}},
		Series: Series{IntervalS: 1, Failed: map[string][]int64{}},
	}
	if err := r.Check(); err != nil {
		t.Fatalf("test result inconsistent: %v", err)
	}
	return r
}

// lowerFiles sets the soft open-files limit to what is open now plus
// spare, until the test ends.
func lowerFiles(t *testing.T, spare uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("needs /proc/self/fd")
	}
	low := old
	low.Cur = uint64(len(ents)) + spare
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// exhaustFiles opens /dev/null until the process may open no more files;
// the returned function reads a result with one of them lent back.
func exhaustFiles(t *testing.T) (readBack func(string) *Result) {
	t.Helper()
	var hogs []*os.File
	t.Cleanup(func() {
		for _, f := range hogs {
			f.Close()
		}
	})
	for i := 0; i < 10000; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("open: %v", err)
			}
			return func(path string) *Result {
				t.Helper()
				last := len(hogs) - 1
				hogs[last].Close()
				r, rerr := Read(path)
				var err error
				if hogs[last], err = os.Open(os.DevNull); err != nil {
					t.Fatalf("take the file back: %v", err)
				}
				if rerr != nil {
					t.Fatal(rerr)
				}
				return r
			}
		}
		hogs = append(hogs, f)
	}
	t.Fatal("the open-files limit was not reached")
	return nil
}

// With every file descriptor taken, checkpoints and the final result are
// still written (Open set aside what they need), where Write fails.
func TestOutputWritesWithNoFreeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	lowerFiles(t, 32)
	o, err := Open(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	readBack := exhaustFiles(t)
	if err := Write(path, small(t, 1, true)); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Write with no free files: %v, want EMFILE (the test did not take every file)", err)
	}
	for i := int64(1); i <= 3; i++ {
		if err := o.Checkpoint(small(t, i, true)); err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
		if got := readBack(path); got.Totals.Requests != i || !got.Run.Partial {
			t.Fatalf("after checkpoint %d the file holds %d requests (partial %v)", i, got.Totals.Requests, got.Run.Partial)
		}
	}
	if err := o.Final(small(t, 10, false)); err != nil {
		t.Fatalf("final: %v", err)
	}
	if got := readBack(path); got.Totals.Requests != 10 || got.Run.Partial {
		t.Fatalf("final file holds %d requests (partial %v)", got.Totals.Requests, got.Run.Partial)
	}
	o.Close()
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left beside the result: %v", names)
	}
}

// A checkpoint that fails leaves the one before it in place, and Saved
// says what is there.
func TestOutputFailedCheckpointKeepsPrevious(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	o, err := Open(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Checkpoint(small(t, 2, true)); err != nil {
		t.Fatal(err)
	}
	// The scratch file's name is taken away, so the swap cannot happen.
	os.Remove(o.scratchName)
	if err := o.Checkpoint(small(t, 5, true)); err == nil {
		t.Fatal("checkpoint with its scratch file gone succeeded")
	}
	if got := readBack(t, path); got.Totals.Requests != 2 {
		t.Fatalf("after a failed checkpoint the file holds %d requests, want the previous 2", got.Totals.Requests)
	}
	if _, partial, ok := o.Saved(); !ok || !partial {
		t.Errorf("Saved = partial %v, ok %v; want the partial checkpoint", partial, ok)
	}
}

// Open refuses a file system with less free space than asked for, and
// says how much is needed and free.
func TestOpenRefusesTooLittleSpace(t *testing.T) {
	dir := t.TempDir()
	free, ok := freeBytes(dir)
	if !ok {
		t.Skip("cannot read free space here")
	}
	_, err := Open(filepath.Join(dir, "r.json"), free+1<<40)
	var se *SpaceError
	if !errors.As(err, &se) || se.Free <= 0 || !strings.Contains(err.Error(), "not enough free space") {
		t.Fatalf("Open asking for more than is free: %v, want a *SpaceError with the figures", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Open left %d files after refusing", len(ents))
	}
}

func readBack(t *testing.T, path string) *Result {
	t.Helper()
	r, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A second Ctrl-C can race the run's own end: once the complete result is
// written, neither a partial final write nor a checkpoint replaces it.
func TestCompleteResultIsNotReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	o, err := Open(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Final(small(t, 4, false)); err != nil {
		t.Fatal(err)
	}
	if err := o.Final(small(t, 2, true)); err != nil {
		t.Fatal(err)
	}
	if err := o.Checkpoint(small(t, 3, true)); err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, path); got.Totals.Requests != 4 || got.Run.Partial {
		t.Fatalf("file holds %d requests, partial %v; want the complete 4", got.Totals.Requests, got.Run.Partial)
	}
}
