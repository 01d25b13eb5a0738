package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// workersOf is the pids of the live processes whose command line holds
// mark and --segment: the workers of one test's coordinator.
func workersOf(t *testing.T, mark string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(mark)) || !bytes.Contains(cmd, []byte("--segment")) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && zombie(st) {
			continue // dead, waiting for a parent to reap it
		}
		pids = append(pids, pid)
	}
	return pids
}

// zombie reads a /proc/PID/stat line's state field.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// killWorkersAtCleanup kills whatever workers of mark are left, so a
// failing run does not leave load running after the test.
func killWorkersAtCleanup(t *testing.T, mark string) {
	t.Cleanup(func() {
		for _, pid := range workersOf(t, mark) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// A coordinator killed outright (kill -9, a CI job's timeout) takes its
// workers with it, and leaves the merge of what they had measured at -o:
// before, both workers went on loading the target until the plan's end
// and -o held nothing at all.
func TestWorkersDieWithTheirCoordinator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the workers through /proc")
	}
	t.Parallel()
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
scenarios:
  s: {steps: [{get: /}, {think: 20ms}]}
load: {stages: [{duration: 120s, users: 2}]}
`, srv.URL), nil)
	killWorkersAtCleanup(t, plan)
	out := filepath.Join(filepath.Dir(plan), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "--workers", "2", "-o", out, "-q")

	// The coordinator's own checkpoint: the merge of the workers'.
	var cp *result.Result
	deadline := time.Now().Add(90 * time.Second)
	for cp == nil || cp.Totals.Requests == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint with requests at -o within 90s\n%s", p.Stderr())
		}
		time.Sleep(200 * time.Millisecond)
		cp, _ = result.Read(out)
	}
	if n := len(workersOf(t, plan)); n != 2 {
		t.Fatalf("%d workers running before the kill, want 2", n)
	}
	p.Signal(t, syscall.SIGKILL)
	p.Wait(t, 30*time.Second)

	deadline = time.Now().Add(30 * time.Second)
	for left := workersOf(t, plan); len(left) > 0; left = workersOf(t, plan) {
		if time.Now().After(deadline) {
			t.Fatalf("workers %v still alive 30s after their coordinator was killed", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := e2etest.ReadResult(t, out)
	if !r.Run.Partial || !strings.Contains(r.Run.PartialReason, "checkpoint") {
		t.Errorf("checkpoint partial=%v (%q), want partial, saying it is a checkpoint", r.Run.Partial, r.Run.PartialReason)
	}
	if r.Run.Segment.Count > 1 {
		t.Errorf("checkpoint is segment %+v, want the merged whole", r.Run.Segment)
	}
	if r.Totals.Requests == 0 {
		t.Error("checkpoint holds no requests")
	}
}

// A worker whose stdin (a pipe from its coordinator) ends stops: where
// there is no parent-death signal (macOS, Windows), this is how workers
// die with their coordinator.
func TestWorkerStopsWhenCoordinatorPipeCloses(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
scenarios:
  s: {steps: [{get: /}, {think: 20ms}]}
load: {stages: [{duration: 120s, users: 1}]}
`, srv.URL), nil)
	cmd := exec.Command(e2etest.Bin, "run", plan, "--segment", "0/2", "-q", "-o", filepath.Join(filepath.Dir(plan), "seg.json"))
	cmd.Env = append(os.Environ(), dist.CoordinatorEnv+"=1", "STAMPEDE_DEBUG=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	// Let it reach its load: a worker must stop then too, not only while
	// it loads the plan.
	time.Sleep(2 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("the worker ended with its stdin still open: %v\n%s", err, stderr.String())
	default:
	}
	stdin.Close()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker still runs 60s after its coordinator's pipe closed\n%s", stderr.String())
	}
}
