// Package dist runs one test as N segments and brings them back together:
// N processes on this machine (--workers), or N pods of a Kubernetes
// Indexed Job (k8s.go). Both keep the same contract — each segment is
// `stampede run PLAN --segment i/N --start-at T`, computes its own share
// (package segment), writes a normal result, and the results merge
// exactly into one (package merge), judged once as a whole.
package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/result"
)

// DefaultLead is how far ahead of now local workers are told to start:
// time enough for every process to load the plan and check the target.
const DefaultLead = 3 * time.Second

// Local describes N segment processes of one plan on this machine.
type Local struct {
	// Bin is the stampede executable the workers run (os.Executable()).
	Bin  string
	Plan string
	// Workers is the number of segments.
	Workers int
	// StartAt is the shared start instant (default now + DefaultLead).
	StartAt time.Time
	// Dir receives seg-<i>.json and seg-<i>.log for each segment.
	Dir string
	// Args are added to every worker's command line (after the plan).
	Args []string
	// Environ is the environment the workers start from: the
	// coordinator's, which only the binary's main reads
	// (session.Process.Environ); nil starts them with Env alone.
	Environ []string
	// Env is added to the workers' environment.
	Env []string
}

// Outcome is how one segment went.
type Outcome struct {
	Segment segment.Segment
	// File is the segment's result file; Result is nil when it could not
	// be read (the segment then counts as missing in the merge).
	File   string
	Log    string
	Result *result.Result
	// ExitCode is the worker's exit status (-1 when it did not run).
	ExitCode int
	// Err says why the segment failed; nil for a clean exit.
	Err error
}

// Name is how messages call the segment: "segment 2 of 4 (index 1)", in
// the words of package merge, with the index pods and --segment use.
func (o Outcome) Name() string {
	return fmt.Sprintf("segment %d of %d (index %d)", o.Segment.Index+1, o.Segment.Count, o.Segment.Index)
}

// Failed reports whether the segment did not finish cleanly.
func (o Outcome) Failed() bool { return o.Err != nil || o.Result == nil }

// WorkerArgs returns the command line of worker i (without the executable).
func (l Local) WorkerArgs(i int, startAt time.Time) []string {
	args := []string{"run", l.Plan,
		"--segment", segment.Segment{Index: i, Count: l.Workers}.String(),
		"--start-at", startAt.UTC().Format(time.RFC3339Nano),
		"-o", filepath.Join(l.Dir, fmt.Sprintf("seg-%d.json", i)),
		"-q"}
	return append(args, l.Args...)
}

// Run starts the workers, forwards each signal received on sigs to all of
// them (they run in their own process group, so a terminal's Ctrl-C
// reaches them only this way, once), and waits for all of them.
func (l Local) Run(ctx context.Context, sigs <-chan os.Signal) ([]Outcome, error) {
	if l.Workers < 1 {
		return nil, fmt.Errorf("workers: %d, expected at least 1", l.Workers)
	}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, err
	}
	startAt := l.StartAt
	if startAt.IsZero() {
		startAt = time.Now().Add(DefaultLead)
	}
	outs := make([]Outcome, l.Workers)
	cmds := make([]*exec.Cmd, l.Workers)
	logs := make([]*os.File, l.Workers)
	for i := range outs {
		o := &outs[i]
		o.Segment = segment.Segment{Index: i, Count: l.Workers}
		o.File = filepath.Join(l.Dir, fmt.Sprintf("seg-%d.json", i))
		o.Log = filepath.Join(l.Dir, fmt.Sprintf("seg-%d.log", i))
		o.ExitCode = -1
		os.Remove(o.File) // a stale file must not pass for this run's
		// Nor stale failure samples (--keep-failures), merged after the run.
		os.Remove(strings.TrimSuffix(o.File, ".json") + ".failures.jsonl")
		f, err := os.Create(o.Log)
		if err != nil {
			o.Err = err
			continue
		}
		logs[i] = f
		cmd := exec.CommandContext(ctx, l.Bin, l.WorkerArgs(i, startAt)...)
		cmd.Stdout, cmd.Stderr = f, f
		cmd.Env = append(append(slices.Clone(l.Environ), l.Env...), CoordinatorEnv+"=1")
		cmd.SysProcAttr = workerAttrs()
		cmds[i] = cmd
	}
	started, done := l.startAll(cmds, outs, logs)
	forwarded := false
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case s, ok := <-sigs:
			if !ok {
				sigs = nil
				continue
			}
			forwarded = true
			<-started // the workers' processes are known from here on
			for _, c := range cmds {
				if c != nil && c.Process != nil {
					_ = c.Process.Signal(s) // one that already ended needs none
				}
			}
		}
	}
	for i := range outs {
		if logs[i] != nil {
			logs[i].Close()
		}
		o := &outs[i]
		if r, err := result.Read(o.File); err == nil {
			o.Result = r
			// A worker we passed Ctrl-C to stops early on purpose: its
			// result says so (partial, with the reason), and its exit
			// status is not a failure of its own.
			if forwarded && r.Run.Partial {
				o.Err = nil
			}
		} else if o.Err == nil {
			o.Err = fmt.Errorf("no result: %v", err)
		}
		if o.Err != nil {
			if tail := lastLines(o.Log, 3); tail != "" {
				o.Err = fmt.Errorf("%w: %s", o.Err, tail)
			}
		}
	}
	return outs, nil
}

// startAll starts the workers and waits for them on one goroutine locked
// to its OS thread: a worker's parent-death signal (Linux) fires when the
// thread that started it ends, and Go may end an idle thread that another
// goroutine locked and left, so the thread that starts the workers is
// kept by this goroutine until every worker has ended. Each worker's
// stdin is a pipe that only the coordinator's death (or its end) closes,
// the way workers stop with it where there is no such signal
// (CoordinatorEnv, followed by the binary's main). started is closed once every start was tried (a
// worker that did not start is nil in cmds from then on), done once every
// worker has ended.
func (l Local) startAll(cmds []*exec.Cmd, outs []Outcome, logs []*os.File) (started, done <-chan struct{}) {
	startedC, doneC := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(doneC)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var wg sync.WaitGroup
		for i, cmd := range cmds {
			if cmd == nil {
				continue
			}
			o := &outs[i]
			if err := startWorker(cmd); err != nil {
				o.Err = fmt.Errorf("start: %w", err)
				logs[i].Close()
				logs[i] = nil
				cmds[i] = nil
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := cmd.Wait()
				o.ExitCode = cmd.ProcessState.ExitCode()
				if err != nil {
					o.Err = fmt.Errorf("exit status %d", o.ExitCode)
				}
			}()
		}
		close(startedC)
		wg.Wait()
	}()
	return startedC, doneC
}

// startWorker starts cmd with a stdin pipe that nothing is written to.
func startWorker(cmd *exec.Cmd) error {
	// The write end is kept open (by the Cmd, until Wait) for as long as
	// the coordinator lives; the system closes it when the coordinator dies.
	if _, err := cmd.StdinPipe(); err != nil {
		return err
	}
	return cmd.Start()
}

// lastLines is the end of a worker's log, to say why it failed.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// ErrNoSegments means no segment left a readable result.
var ErrNoSegments = errors.New("no segment produced a result")

// Merge merges the segments that left a result. A segment that failed or
// left none makes the merged result partial, and the reason names it and
// says why; merge itself names segments with no result at all.
func Merge(outs []Outcome) (*result.Result, error) {
	var rs []*result.Result
	var names []string
	var failed []string
	for _, o := range outs {
		if o.Result != nil {
			rs = append(rs, o.Result)
			names = append(names, o.Name())
		}
		if o.Err != nil {
			failed = append(failed, fmt.Sprintf("%s failed (%v)", o.Name(), o.Err))
		}
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoSegments, strings.Join(failed, "; "))
	}
	m, err := merge.Options{Names: names}.Results(rs)
	if err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		m.Run.Partial = true
		m.Run.PartialReason = joinReasons(strings.Join(failed, "; "), m.Run.PartialReason)
	}
	return m, nil
}

func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// SummaryOfOutcomes is one line per segment, for the terminal.
func SummaryOfOutcomes(w io.Writer, outs []Outcome) {
	var b bytes.Buffer
	for _, o := range outs {
		state := "ok"
		switch {
		case o.Err != nil:
			state = "FAILED: " + o.Err.Error()
		case o.Result != nil && o.Result.Run.Partial:
			state = "partial: " + o.Result.Run.PartialReason
		}
		reqs := int64(0)
		if o.Result != nil {
			reqs = o.Result.Totals.Requests
		}
		fmt.Fprintf(&b, "  %s: %d requests, %s (%s)\n", o.Name(), reqs, state, o.Log)
	}
	_, _ = w.Write(b.Bytes()) // a summary for the terminal: nothing to do if it cannot be shown
}
