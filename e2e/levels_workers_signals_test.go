package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// A sweep of one long level, for tests that stop it while its two
// segments load the target.
const longLevelSweep = `
target: %s
scenarios:
  s: {steps: [{get: /}, {think: 20ms}]}
load: {stages: [{duration: 1s, users: 1}]}
`

// startLongLevel starts `sweep --workers 2` on one level held for two
// minutes and returns once both segments are up and the target has
// answered them.
func startLongLevel(t *testing.T) (p *e2etest.Proc, planPath, out string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	planPath = e2etest.WritePlan(t, fmt.Sprintf(longLevelSweep, srv.URL), nil)
	killWorkersAtCleanup(t, planPath)
	out = filepath.Join(filepath.Dir(planPath), "sweep.json")
	p = e2etest.Start(t, "", nil, "sweep", planPath, "--users", "2", "--hold", "120s", "--workers", "2", "-o", out, "-q")
	deadline := time.Now().Add(90 * time.Second)
	for len(workersOf(t, planPath)) < 2 || hits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("within 90s: %d segments running, %d requests answered; want 2 segments loading\n%s",
				len(workersOf(t, planPath)), hits.Load(), p.Stderr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p, planPath, out, hits
}

// A sweep's coordinator killed outright (kill -9, a CI job's timeout)
// takes its level's segments with it: before, they were started as plain
// children, and went on loading the target to the level's end with no one
// left to merge or judge what they measured.
func TestLevelSegmentsDieWithTheirCoordinator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the segments through /proc")
	}
	t.Parallel()
	p, planPath, _, _ := startLongLevel(t)
	p.Signal(t, syscall.SIGKILL)
	p.Wait(t, 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for left := workersOf(t, planPath); len(left) > 0; left = workersOf(t, planPath) {
		if time.Now().After(deadline) {
			t.Fatalf("segments %v still alive 30s after their coordinator was killed", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parentOf reads a process's parent pid from /proc/PID/stat.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
	var state string
	var ppid int
	i := strings.LastIndexByte(string(st), ')')
	if _, err := fmt.Sscan(string(st[i+1:]), &state, &ppid); err != nil {
		t.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	return ppid
}

// stoppedSegments reads the level's segment results a stopped sweep left.
func stoppedSegments(t *testing.T, out string) []*result.Result {
	t.Helper()
	var rs []*result.Result
	for k := range 2 {
		rs = append(rs, e2etest.ReadResult(t, filepath.Join(out+".segments", fmt.Sprintf("level-0-seg-%d.json", k))))
	}
	return rs
}

// One Ctrl-C at a terminal reaches the whole foreground process group.
// The level's segments are in a group of their own, so they hear it once,
// from the coordinator, and stop in order: before, they shared the
// terminal's group, heard it twice (the terminal's and the one passed on)
// and quit at once, "interrupted twice", requests in flight not waited for.
func TestLevelSegmentsHearOneCtrlCOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the segments through /proc")
	}
	t.Parallel()
	p, planPath, out, _ := startLongLevel(t)
	// e2etest.Start puts the coordinator in a group of its own, its pid:
	// the terminal's foreground group. The segments' parent is it.
	coordinator := parentOf(t, workersOf(t, planPath)[0])
	if err := syscall.Kill(-coordinator, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	o := p.Wait(t, 90*time.Second)
	if strings.Contains(o.Stderr, "interrupted twice") {
		t.Errorf("one Ctrl-C was taken for two:\n%s", o)
	}
	for k, r := range stoppedSegments(t, out) {
		if why := r.Run.PartialReason; !r.Run.Partial || strings.Contains(why, "twice") || !strings.Contains(why, "Ctrl-C") {
			t.Errorf("segment %d: partial %v (%q), want stopped by one Ctrl-C\n%s", k, r.Run.Partial, why, o)
		}
	}
	// The level's figures are its hold's: a Ctrl-C that lands while the
	// segments still ramp (a loaded machine) leaves it 0 measured
	// requests, rightly. What must hold is that the merged level is there
	// and says it was stopped by the one Ctrl-C.
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no sweep result: %v\n%s", err, o)
	}
	r := e2etest.ReadResult(t, out)
	if len(r.Levels) != 1 || r.Levels[0].Result == nil {
		t.Fatalf("the sweep's result does not hold the stopped level\n%s", o)
	}
	if why := r.Run.PartialReason; !r.Run.Partial || !strings.Contains(why, "Ctrl-C") || strings.Contains(why, "twice") {
		t.Errorf("sweep result: partial %v (%q), want stopped by one Ctrl-C", r.Run.Partial, why)
	}
}

// A SIGTERM to the coordinator (a CI job cancelled) is passed on to the
// segments as SIGTERM, so what they write names it; before, they were
// told Ctrl-C whatever stopped the coordinator.
func TestLevelSegmentsAreToldSIGTERM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the segments through /proc")
	}
	t.Parallel()
	p, _, out, _ := startLongLevel(t)
	p.Signal(t, syscall.SIGTERM)
	o := p.Wait(t, 90*time.Second)
	for k, r := range stoppedSegments(t, out) {
		if why := r.Run.PartialReason; !r.Run.Partial || !strings.Contains(why, "SIGTERM") || strings.Contains(why, "Ctrl-C") {
			t.Errorf("segment %d: partial %v (%q), want stopped by SIGTERM\n%s", k, r.Run.Partial, why, o)
		}
	}
}

// --allow-files reaches the level's segments as it reaches `run
// --workers`' workers: before, the segments loaded the plan without it,
// could not read its body_file, and the level had no segment to measure.
func TestLevelSegmentsGetAllowFiles(t *testing.T) {
	t.Parallel()
	var bodies atomic.Int64
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); string(b) == "from-outside" {
			bodies.Add(1)
		}
	}))
	outside := t.TempDir()
	body := filepath.Join(outside, "body.txt")
	if err := os.WriteFile(body, []byte("from-outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
scenarios:
  s: {steps: [{post: /, body_file: %s}, {think: 20ms}]}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, body), nil)
	dir := filepath.Dir(planPath)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "--allow-files", outside, "sweep", planPath,
		"--users", "2", "--hold", "1s", "--workers", "2", "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", o.Code, o)
	}
	r := e2etest.ReadResult(t, out)
	if len(r.Levels) != 1 || r.Levels[0].Result == nil {
		t.Fatalf("%d levels, want 1", len(r.Levels))
	}
	if got, sent := r.Levels[0].Result.Totals.Successful, bodies.Load(); got == 0 || got > sent {
		t.Errorf("%d requests measured successful, %d bodies from the allowed file received", got, sent)
	}
}
