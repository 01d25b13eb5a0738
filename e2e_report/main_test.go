// Package e2e_report runs the real stampede binary's report, compare and
// merge commands on results of real runs against the built-in demo target,
// and opens the HTML reports in headless Chromium.
//
// The binary is built once in TestMain; the runs happen once, on first
// use, and take about 17 s.
package e2e_report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	bin     string // the stampede binary
	modRoot string // the module root
	shared  string // lives as long as the test binary
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		fmt.Fprintln(os.Stderr, "e2e_report: cannot find the module root:", err)
		return 1
	}
	modRoot = filepath.Dir(strings.TrimSpace(string(out)))
	dir, err := os.MkdirTemp("", "stampede-e2e-report-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e_report:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	shared = dir
	bin = filepath.Join(dir, "stampede")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/stampede")
	cmd.Dir = modRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e_report: go build ./cmd/stampede: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// outcome is what one invocation of the binary did.
type outcome struct {
	stdout, stderr string
	code           int
}

// command runs the binary in its own process group, so a run that hangs is
// killed along with the demo target it started, and its output pipes
// cannot keep the test waiting.
func command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = modRoot
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func stampede(t *testing.T, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(ctx, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	o := outcome{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	default:
		t.Fatalf("stampede %v: %v", args, err)
	}
	return o
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
			*r.path = filepath.Join(shared, r.name)
			plan := filepath.Join(modRoot, "e2e_report", "testdata", r.plan)
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

// testOutput is where screenshots go for CI to keep as artifacts.
func testOutput(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(modRoot, "test-output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
