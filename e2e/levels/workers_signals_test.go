package levels

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// heldLevels starts `sweep --users 2,3 --workers 2` against a target that
// holds every request until the test ends, and returns once both segments
// of the first level have a request in flight: a Ctrl-C then finds each
// segment waiting out its 60s grace period.
func heldLevels(t *testing.T) (p *e2etest.Proc, plan, out string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("finds the segments through /proc")
	}
	var seen atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	dir, plan := writePlan(t, `name: held
target: `+srv.URL+`
defaults: {timeout: 120s}
scenarios:
  s: {steps: [{name: held, get: /}]}
load:
  grace: 60s
  stages: [{duration: 1s, users: 1}]
`)
	t.Cleanup(func() {
		for _, pid := range segmentsOf(t, plan) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	out = filepath.Join(dir, "sweep.json")
	p = e2etest.Start(t, dir, nil, "sweep", plan, "--users", "2,3", "--hold", "60s", "--workers", "2", "-o", out, "-q")
	for deadline := time.Now().Add(90 * time.Second); len(segmentsOf(t, plan)) < 2 || seen.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("within 90s: %d segments, %d requests held; want 2 and 2\n%s", len(segmentsOf(t, plan)), seen.Load(), p.Stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p, plan, out
}

// segmentsOf are the live segment processes of the sweep of plan.
func segmentsOf(t *testing.T, plan string) []int {
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
		if err != nil || !bytes.Contains(cmd, []byte(plan)) || !bytes.Contains(cmd, []byte("--segment")) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(st, ')'); err != nil || i < 0 || bytes.HasPrefix(bytes.TrimSpace(st[i+1:]), []byte("Z")) {
			continue // gone, or dead and not yet reaped
		}
		pids = append(pids, pid)
	}
	return pids
}

// untilSegmentsStop waits until every segment's log says it is stopping:
// the Ctrl-C reached it.
func untilSegmentsStop(t *testing.T, p *e2etest.Proc, out string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		stopping := 0
		for k := range 2 {
			log, _ := os.ReadFile(filepath.Join(out+".segments", fmt.Sprintf("level-0-seg-%d.json.log", k)))
			if bytes.Contains(log, []byte("stopping")) {
				stopping++
			}
		}
		if stopping == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 segments said they were stopping within 30s of the Ctrl-C\n%s", stopping, p.Stderr())
		}
	}
}

// firstLevelCutOff checks that the sweep's result is there, partial, and
// holds the first level alone, stopped for want.
func firstLevelCutOff(t *testing.T, o e2etest.Outcome, out, want string) *result.Result {
	t.Helper()
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no result file after a Ctrl-C: %v\n%s", err, o)
	}
	r := e2etest.ReadResult(t, out)
	if !r.Run.Partial {
		t.Errorf("result not marked partial\n%s", o)
	}
	if len(r.Levels) != 1 || r.Levels[0].Value != 2 || r.Levels[0].Result == nil {
		t.Fatalf("%d levels in the result, want the first (users 2) alone\n%s", len(r.Levels), o)
	}
	lv := r.Levels[0].Result
	if !lv.Run.Partial || !strings.Contains(lv.Run.PartialReason, want) {
		t.Errorf("level partial %v (%q), want it to say %q\n%s", lv.Run.Partial, lv.Run.PartialReason, want, o)
	}
	if o.Code != 3 {
		t.Errorf("exit %d, want 3 (incomplete)\n%s", o.Code, o)
	}
	return r
}

// A Ctrl-C whose level leaves nothing to merge (its segments died before
// they wrote: killed, out of memory) still leaves a result, marked
// partial: before, the coordinator failed the merge, kept no level, and
// wrote no result file at all.
func TestWorkersLevelLostAfterCtrlCStillLeavesAResult(t *testing.T) {
	t.Parallel()
	p, plan, out := heldLevels(t)
	p.Signal(t, os.Interrupt)
	untilSegmentsStop(t, p, out)
	for _, pid := range segmentsOf(t, plan) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	o := p.Wait(t, 60*time.Second)
	firstLevelCutOff(t, o, out, "Ctrl-C")
}

// A second Ctrl-C is passed on to the level's segments as `run --workers`
// passes it to its workers: they quit at once, each writes its partial,
// and the level is their merge. Before, the coordinator quit at once
// itself, its segments died with it, and no result was written.
func TestWorkersLevelSecondCtrlCReachesTheSegments(t *testing.T) {
	t.Parallel()
	p, _, out := heldLevels(t)
	p.Signal(t, os.Interrupt)
	untilSegmentsStop(t, p, out)
	p.Signal(t, os.Interrupt)
	// The grace period is 60s: only segments that quit at once end
	// within this.
	o := p.Wait(t, 30*time.Second)
	firstLevelCutOff(t, o, out, "twice")
	// The first Ctrl-C goes to the segments, and the user still hears once
	// that a second one quits at once (before: nothing was said).
	if n := strings.Count(o.Stderr, "(Ctrl-C again to quit now)"); n != 1 {
		t.Errorf("the stop note appeared %d times, want once\n%s", n, o.Stderr)
	}
	for k := range 2 {
		seg := e2etest.ReadResult(t, filepath.Join(out+".segments", fmt.Sprintf("level-0-seg-%d.json", k)))
		if !strings.Contains(seg.Run.PartialReason, "twice") {
			t.Errorf("segment %d: %q, want it quit at once by the second Ctrl-C", k, seg.Run.PartialReason)
		}
	}
}
