// Package report runs the real stampede binary's report, compare and
// merge commands on results of real runs against the built-in demo target,
// and opens the HTML reports in headless Chromium.
//
// The binary is built once in TestMain; the runs happen once, on first
// use, and take about 17 s.
package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/report")) }

// command runs the binary in its own process group, so a run that hangs is
// killed along with the demo target it started, and its output pipes
// cannot keep the test waiting.
func command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e2etest.Bin, args...)
	cmd.Dir = e2etest.ModRoot
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// stampede runs the binary in the module root; these commands only read
// and write files, so two minutes is a hang, not a slow machine.
func stampede(t *testing.T, args ...string) e2etest.Outcome {
	t.Helper()
	return e2etest.Stampede(t, 2*time.Minute, "", args...)
}

// runs are real runs: testdata/small.yaml against a healthy demo and
// against a demo whose two-connection database pool saturates (slow, with
// 503s) — the quickstart's before/after — and an open-model run.
var runs struct {
	once                sync.Once
	healthy, slow, open string
	err                 error
}

func realRuns(t *testing.T) (healthy, slow string) {
	t.Helper()
	h, s, _ := allRuns(t)
	return h, s
}

func allRuns(t *testing.T) (healthy, slow, open string) {
	t.Helper()
	runs.once.Do(func() {
		for _, r := range []struct {
			path       *string
			plan, name string
			demo       string
		}{
			{&runs.healthy, "small.yaml", "healthy.json", ""},
			{&runs.slow, "small.yaml", "slow.json", "pool=2,service=20ms,wait=150ms"},
			// Open model, arrivals beyond a small in-flight cap: dropped
			// arrivals and a target rate to chart.
			{&runs.open, "open.yaml", "open.json", "pool=2,service=10ms,wait=500ms"},
		} {
			*r.path = filepath.Join(e2etest.Shared, r.name)
			plan := filepath.Join(e2etest.ModRoot, "e2e", "report", "testdata", r.plan)
			args := []string{"run", plan, "-q", "-o", *r.path}
			if r.demo != "" {
				args = append(args, "--demo", r.demo)
			}
			// A 5 s plan: a minute is a hang, not a slow machine.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err := command(ctx, args...).CombinedOutput()
			cancel()
			var ee *exec.ExitError
			// Exit 1 is a failed threshold: the slow run is meant to fail.
			if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
				runs.err = fmt.Errorf("stampede %v: %v\n%s", args, err, out)
				return
			}
		}
	})
	if runs.err != nil {
		t.Fatal(runs.err)
	}
	return runs.healthy, runs.slow, runs.open
}

// connRun is a run with SignalR connections and the host monitor
// (testdata/conns.yaml): the connection and server sections of the reports.
var connRun struct {
	once sync.Once
	path string
	err  error
}

func connsRun(t *testing.T) string {
	t.Helper()
	connRun.once.Do(func() {
		connRun.path = filepath.Join(e2etest.Shared, "conns.json")
		plan := filepath.Join(e2etest.ModRoot, "e2e", "report", "testdata", "conns.yaml")
		args := []string{"run", plan, "-q", "-o", connRun.path, "--monitor", "host"}
		// A 6 s plan: a minute is a hang, not a slow machine.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := command(ctx, args...).CombinedOutput(); err != nil {
			connRun.err = fmt.Errorf("stampede %v: %v\n%s", args, err, out)
		}
	})
	if connRun.err != nil {
		t.Fatal(connRun.err)
	}
	return connRun.path
}

// testOutput is where screenshots go for CI to keep as artifacts.
func testOutput(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(e2etest.ModRoot, "test-output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
