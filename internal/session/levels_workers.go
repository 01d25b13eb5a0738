package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// LevelWorkers runs each level of gates, a sweep or a capacity search as
// Workers processes of this binary, each sending its segment's share of
// the level (`stampede sweep PLAN --VARY V --segment i/N --start-at T`),
// and merges their level results exactly into the level, judged once
// here: a level past what one process can hold (open files, rate) runs
// as several, and the levels still go one after another, each judged
// whole. Set its Runner as levels.Options.Runner.
type LevelWorkers struct {
	Bin      string // this executable
	PlanFile string
	Plan     *plan.Plan
	Workers  int
	// Dir receives level-<j>-seg-<i>.json and .log for each level and
	// segment.
	Dir string
	// Lead is how far ahead the segments are told to start (default
	// dist.DefaultLead): time to load the plan and check the target.
	Lead time.Duration
	// Stderr hears a line per level (default: nowhere).
	Stderr io.Writer
	// Args are added to every segment's command line: the global flags
	// (--allow-files) that `run --workers` passes on to its workers too.
	Args []string
}

// Runner runs one level in the workers; it is levels.Options.Runner.
// While the segments run, the session's signals come on o.Signals and
// are passed on to them, every one, as `run --workers` passes them: the
// first stops them in order, a second makes them quit at once, and
// either way they write their partials, merged here into the level.
func (w LevelWorkers) Runner(ctx context.Context, vary string, v float64, i, n int, o levels.Options) (result.Level, error) {
	if ctx.Err() != nil {
		// Stopped between two levels: this one is not started, and the
		// levels before it are saved with it.
		return levels.Interrupted(w.Plan, vary, v, o, fmt.Sprintf("interrupted (%s) before the level started", run.InterruptName(ctx))), nil
	}
	lead := w.Lead
	if lead <= 0 {
		lead = dist.DefaultLead
	}
	start := time.Now().Add(lead)
	if o.Event != nil {
		o.Event(levels.Event{Vary: vary, Value: v, Phase: fmt.Sprintf("ramp and hold in %d processes", w.Workers),
			Duration: lead + o.Ramp + o.Hold, Index: i, Count: n})
	}
	outs, errs, heard := w.runSegments(ctx, vary, v, i, o, start)
	lv, err := w.merge(vary, v, outs, errs)
	stopped := ""
	switch {
	case heard != nil:
		stopped = "interrupted (" + run.SignalName(heard) + ")"
	case ctx.Err() != nil:
		stopped = "interrupted (" + run.InterruptName(ctx) + ")"
	}
	if err != nil && stopped != "" {
		// A Ctrl-C must leave a result: the levels that finished, and
		// this one said to be cut off with what it lost.
		return levels.Interrupted(w.Plan, vary, v, o, fmt.Sprintf("%s; nothing of the level could be merged: %v", stopped, err)), nil
	}
	if err != nil {
		return lv, err
	}
	if stopped != "" && !lv.Result.Run.Partial {
		// The segments ended their level as the signal came: the level
		// is whole, but no level may follow it.
		lv.Result.Run.Partial, lv.Result.Run.PartialReason = true, stopped+" as the level ended"
	}
	levels.Judge(lv.Result, w.Plan, o.SLO)
	lv.SLO = lv.Result.Thresholds
	lv.Pass = LevelPass(lv)
	if w.Stderr != nil {
		fmt.Fprintf(w.Stderr, "%s %s: %d segments merged, %d requests\n", vary, levels.FormatLevel(vary, v), w.Workers, lv.Result.Totals.Requests)
	}
	return lv, nil
}

// runSegments runs the level's segments and waits for them, passing on
// every signal o.Signals brings meanwhile; heard is the first of them
// (nil when none came).
func (w LevelWorkers) runSegments(ctx context.Context, vary string, v float64, i int, o levels.Options, start time.Time) (outs []string, errs []error, heard os.Signal) {
	outs, errs = make([]string, w.Workers), make([]error, w.Workers)
	sigs := make([]*segmentSignals, w.Workers)
	forward := o.Forward
	if forward == nil {
		forward = func(bool) {}
	}
	forward(true)
	defer forward(false)
	var wg sync.WaitGroup
	for k := range w.Workers {
		outs[k] = filepath.Join(w.Dir, fmt.Sprintf("level-%d-seg-%d.json", i, k))
		os.Remove(outs[k]) // a stale file must not pass for this level's
		sigs[k] = newSegmentSignals(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = w.runSegment(sigs[k], vary, v, o, segment.Segment{Index: k, Count: w.Workers}, start, outs[k])
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	in := o.Signals
	for {
		select {
		case <-done:
			return outs, errs, heard
		case sig, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			if heard == nil {
				heard = sig
			}
			for _, s := range sigs {
				s.pass(sig)
			}
		}
	}
}

// runSegment runs one segment of the level and waits for it, as a worker
// of this process (dist.RunWorker): it dies with this process, and only
// this process passes it signals (segmentSignals): the ones forwarded to
// it, or the one that ended ctx (Ctrl-C or SIGTERM), once; the segment
// then stops and writes its partial.
func (w LevelWorkers) runSegment(sigs *segmentSignals, vary string, v float64, o levels.Options, seg segment.Segment, start time.Time, out string) error {
	args := []string{"sweep", w.PlanFile, "--" + vary, strconv.FormatFloat(v, 'f', -1, 64),
		"--hold", o.Hold.String(), "--ramp", o.Ramp.String(),
		"--segment", seg.String(), "--start-at", start.UTC().Format(time.RFC3339Nano), "-o", out, "-q"}
	args = append(args, w.Args...)
	logf, err := os.Create(out + ".log")
	if err != nil {
		return err
	}
	defer logf.Close()
	defer sigs.stop()
	cmd := exec.CommandContext(sigs.ctx, w.Bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return sigs.attach(cmd.Process) }
	cmd.WaitDelay = time.Minute
	err = dist.RunWorker(cmd)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == ExitThreshold {
		// The segment judged its share; the level is judged whole here.
		return nil
	}
	if err != nil {
		return fmt.Errorf("segment %s: %v (see %s)", seg, err, out+".log")
	}
	return nil
}

// stopSignal is the signal that ended ctx (run.Interrupt is its cause),
// passed on as it came; an interrupt when ctx ended otherwise.
func stopSignal(ctx context.Context) os.Signal {
	var in run.Interrupt
	if errors.As(context.Cause(ctx), &in) && in.Signal != nil {
		return in.Signal
	}
	return os.Interrupt
}

// merge reads the segments' results and merges their level exactly; a
// segment that left none makes the level partial, named.
func (w LevelWorkers) merge(vary string, v float64, outs []string, errs []error) (result.Level, error) {
	lv := result.Level{Vary: vary, Value: v}
	var rs []*result.Result
	var names []string
	var missing []string
	for k, f := range outs {
		r, err := result.Read(f)
		if err != nil || len(r.Levels) != 1 || r.Levels[0].Result == nil {
			why := fmt.Sprintf("segment %d/%d left no level result", k, len(outs))
			if errs[k] != nil {
				why = errs[k].Error()
			}
			missing = append(missing, why)
			continue
		}
		rs, names = append(rs, r), append(names, filepath.Base(f))
		l := r.Levels[0]
		lv.RampS, lv.RampPlannedS = max(lv.RampS, l.RampS), l.RampPlannedS
		lv.RampOverran = lv.RampOverran || l.RampOverran
		if lv.NotInPlace == "" && l.NotInPlace != "" {
			lv.NotInPlace = fmt.Sprintf("segment %d/%d: %s", k, len(outs), l.NotInPlace)
		}
		if lv.Suspect == "" && l.Suspect != "" {
			lv.Suspect = fmt.Sprintf("segment %d/%d: %s", k, len(outs), l.Suspect)
		}
	}
	if len(rs) == 0 {
		return lv, fmt.Errorf("level %s %s: no segment left a result: %v", vary, levels.FormatLevel(vary, v), missing)
	}
	m, err := merge.Options{Names: names}.Results(rs)
	if err != nil {
		return lv, fmt.Errorf("level %s %s: merging the segments: %w", vary, levels.FormatLevel(vary, v), err)
	}
	lv.Result = m.Levels[0].Result
	if len(missing) > 0 {
		lv.Result.Run.Partial = true
		lv.Result.Run.PartialReason = fmt.Sprint(missing)
	}
	return lv, nil
}
