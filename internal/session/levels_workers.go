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
// segments elsewhere, each sending its share of the level (`stampede
// sweep PLAN --VARY V --segment i/N --start-at T`), and merges their level
// results exactly into the level, judged once here: a level past what one
// process can hold (open files, rate) runs as several, and the levels
// still go one after another, each judged whole. Where the segments run is
// Segments': processes of this binary (LocalSegments, --workers) or the
// pods of a Kubernetes Job per level (`stampede k8s gates|sweep`). Set its
// Runner as levels.Options.Runner.
type LevelWorkers struct {
	Plan     *plan.Plan
	Segments LevelSegments
	// Stderr hears a line per level (default: nowhere).
	Stderr io.Writer
	// IDs, when set, carries the users' numbering from level to level:
	// the highest {{ vu }} and iteration the segments of the levels so far
	// reached, handed to the next level's (--ids-after), as one process's
	// levels carry them (vu.Carry).
	IDs *result.IDsReached
}

// LevelSegments runs one level's segments and hands back what each left;
// LevelWorkers starts them, merges and judges.
type LevelSegments interface {
	// Count is how many segments share each level.
	Count() int
	// Lead is how far ahead of now a level's segments are told to start:
	// time to start them, load the plan and check the target.
	Lead() time.Duration
	// Where names them in the progress line ("2 processes").
	Where() string
	// Run runs level l's segments from start and waits for them, passing
	// on (or acting on) every signal l.Options.Signals brings meanwhile;
	// heard is the first of them (nil when none came). It returns one
	// SegmentResult per segment, in index order.
	Run(ctx context.Context, l LevelCall, start time.Time) (segs []SegmentResult, heard os.Signal)
}

// LevelCall is the level a LevelSegments runs.
type LevelCall struct {
	Vary    string
	Value   float64
	Index   int // of the level, from 0
	Options levels.Options
	// IDsAfter ("VU,ITER", or empty at the first level) is what the
	// segments number their users after (sweep --ids-after).
	IDsAfter string
}

// SegmentResult is what one segment of a level left: its result (a
// sweep's of the one level), or nil and why not.
type SegmentResult struct {
	Name   string // the merge names the segment so (file, pod)
	Result *result.Result
	Err    error
}

// Runner runs one level in the segments; it is levels.Options.Runner.
// While the segments run, the session's signals come on o.Signals and
// are the segments' (LevelSegments.Run): local processes hear every one,
// as `run --workers` passes them, and write their partials, merged here
// into the level; a Kubernetes level's Job is deleted.
func (w LevelWorkers) Runner(ctx context.Context, vary string, v float64, i, n int, o levels.Options) (result.Level, error) {
	if ctx.Err() != nil {
		// Stopped between two levels: this one is not started, and the
		// levels before it are saved with it.
		return levels.Interrupted(w.Plan, vary, v, o, fmt.Sprintf("interrupted (%s) before the level started", run.InterruptName(ctx))), nil
	}
	lead := w.Segments.Lead()
	start := time.Now().Add(lead)
	if o.Event != nil {
		o.Event(levels.Event{Vary: vary, Value: v, Phase: "ramp and hold in " + w.Segments.Where(),
			Duration: lead + o.Ramp + o.Hold, Index: i, Count: n})
	}
	call := LevelCall{Vary: vary, Value: v, Index: i, Options: o}
	if w.IDs != nil && (w.IDs.VU > 0 || w.IDs.Iter > 0) {
		call.IDsAfter = fmt.Sprintf("%d,%d", w.IDs.VU, w.IDs.Iter)
	}
	segs, heard := w.Segments.Run(ctx, call, start)
	if ids, ok := idsAfter(segs); ok && w.IDs != nil {
		*w.IDs = ids
	}
	lv, err := w.merge(vary, v, segs)
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
		fmt.Fprintf(w.Stderr, "%s %s: %d segments merged, %d requests\n", vary, levels.FormatLevel(vary, v), w.Segments.Count(), lv.Result.Totals.Requests)
	}
	return lv, nil
}

// LocalSegments runs each segment of a level as a process of this binary
// on this machine (--workers).
type LocalSegments struct {
	Bin      string // this executable
	PlanFile string
	Workers  int
	// Dir receives level-<j>-seg-<i>.json and .log for each level and
	// segment.
	Dir string
	// LeadTime is how far ahead the segments are told to start (default
	// dist.DefaultLead): time to load the plan and check the target.
	LeadTime time.Duration
	// Args are added to every segment's command line: the global flags
	// (--allow-files) that `run --workers` passes on to its workers too.
	Args []string
	// Seed, when set, is handed to every segment (STAMPEDE_SEED) as `run
	// --workers` hands it: one draw for every level of the test.
	Seed *uint64
	// Stderr hears the stop note of the first signal passed on: the
	// segments are quiet, so nobody else tells the user that a second
	// Ctrl-C quits at once.
	Stderr io.Writer
}

func (w LocalSegments) Count() int    { return w.Workers }
func (w LocalSegments) Where() string { return fmt.Sprintf("%d processes", w.Workers) }

func (w LocalSegments) Lead() time.Duration {
	if w.LeadTime <= 0 {
		return dist.DefaultLead
	}
	return w.LeadTime
}

// Run runs the level's segments and waits for them, passing on every
// signal o.Signals brings meanwhile, and reads the results they wrote.
func (w LocalSegments) Run(ctx context.Context, l LevelCall, start time.Time) ([]SegmentResult, os.Signal) {
	outs, errs := make([]string, w.Workers), make([]error, w.Workers)
	sigs := make([]*segmentSignals, w.Workers)
	o := l.Options
	forward := o.Forward
	if forward == nil {
		forward = func(bool) {}
	}
	forward(true)
	defer forward(false)
	var wg sync.WaitGroup
	noted := false
	for k := range w.Workers {
		outs[k] = filepath.Join(w.Dir, fmt.Sprintf("level-%d-seg-%d.json", l.Index, k))
		os.Remove(outs[k]) // a stale file must not pass for this level's
		sigs[k] = newSegmentSignals(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = w.runSegment(sigs[k], l, segment.Segment{Index: k, Count: w.Workers}, start, outs[k])
		}()
	}
	heard := passSignals(&wg, o.Signals, func(sig os.Signal) {
		if w.Stderr != nil && !noted {
			noted = true
			fmt.Fprintln(w.Stderr, signalNote(sig, DefaultStopNote))
		}
		for _, s := range sigs {
			s.pass(sig)
		}
	})
	segs := make([]SegmentResult, w.Workers)
	for k, f := range outs {
		segs[k] = SegmentResult{Name: filepath.Base(f), Err: errs[k]}
		if r, err := result.Read(f); err == nil {
			segs[k].Result = r
		}
	}
	return segs, heard
}

// passSignals waits for wg, handing every signal in brings meanwhile to
// pass; heard is the first of them (nil when none came).
func passSignals(wg *sync.WaitGroup, in <-chan os.Signal, pass func(os.Signal)) (heard os.Signal) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for {
		select {
		case <-done:
			return heard
		case sig, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			if heard == nil {
				heard = sig
			}
			pass(sig)
		}
	}
}

// runSegment runs one segment of the level and waits for it, as a worker
// of this process (dist.RunWorker): it dies with this process, and only
// this process passes it signals (segmentSignals): the ones forwarded to
// it, or the one that ended ctx (Ctrl-C or SIGTERM), once; the segment
// then stops and writes its partial.
func (w LocalSegments) runSegment(sigs *segmentSignals, l LevelCall, seg segment.Segment, start time.Time, out string) error {
	o := l.Options
	args := []string{"sweep", w.PlanFile, "--" + l.Vary, strconv.FormatFloat(l.Value, 'f', -1, 64),
		"--hold", o.Hold.String(), "--ramp", o.Ramp.String(),
		"--segment", seg.String(), "--start-at", start.UTC().Format(time.RFC3339Nano), "-o", out, "-q"}
	if l.IDsAfter != "" {
		args = append(args, "--ids-after", l.IDsAfter)
	}
	args = append(args, w.Args...)
	logf, err := os.Create(out + ".log")
	if err != nil {
		return err
	}
	defer logf.Close()
	defer sigs.stop()
	cmd := exec.CommandContext(sigs.ctx, w.Bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if w.Seed != nil {
		cmd.Env = append(cmd.Environ(), fmt.Sprintf("%s=%d", seedEnv, *w.Seed))
	}
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

// merge merges the segments' level results exactly; a segment that left
// none makes the level partial, named.
func (w LevelWorkers) merge(vary string, v float64, segs []SegmentResult) (result.Level, error) {
	lv := result.Level{Vary: vary, Value: v}
	var rs []*result.Result
	var names []string
	var missing []string
	for k, sg := range segs {
		r := sg.Result
		if r == nil || len(r.Levels) != 1 || r.Levels[0].Result == nil {
			why := fmt.Sprintf("segment %d/%d left no level result", k, len(segs))
			if sg.Err != nil {
				why = sg.Err.Error()
			}
			missing = append(missing, why)
			continue
		}
		rs, names = append(rs, r), append(names, sg.Name)
		l := r.Levels[0]
		lv.RampS, lv.RampPlannedS = max(lv.RampS, l.RampS), l.RampPlannedS
		lv.RampOverran = lv.RampOverran || l.RampOverran
		if lv.NotInPlace == "" && l.NotInPlace != "" {
			lv.NotInPlace = fmt.Sprintf("segment %d/%d: %s", k, len(segs), l.NotInPlace)
		}
		if lv.Suspect == "" && l.Suspect != "" {
			lv.Suspect = fmt.Sprintf("segment %d/%d: %s", k, len(segs), l.Suspect)
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
