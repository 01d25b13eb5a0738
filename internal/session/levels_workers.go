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
func (w LevelWorkers) Runner(ctx context.Context, vary string, v float64, i, n int, o levels.Options) (result.Level, error) {
	lead := w.Lead
	if lead <= 0 {
		lead = dist.DefaultLead
	}
	start := time.Now().Add(lead)
	if o.Event != nil {
		o.Event(levels.Event{Vary: vary, Value: v, Phase: fmt.Sprintf("ramp and hold in %d processes", w.Workers),
			Duration: lead + o.Ramp + o.Hold, Index: i, Count: n})
	}
	outs := make([]string, w.Workers)
	errs := make([]error, w.Workers)
	var wg sync.WaitGroup
	for k := range w.Workers {
		outs[k] = filepath.Join(w.Dir, fmt.Sprintf("level-%d-seg-%d.json", i, k))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = w.runSegment(ctx, vary, v, o, segment.Segment{Index: k, Count: w.Workers}, start, outs[k])
		}()
	}
	wg.Wait()
	lv, err := w.merge(vary, v, outs, errs)
	if err != nil && ctx.Err() != nil {
		return lv, fmt.Errorf("level %s %s: interrupted before its segments measured anything (%v)", vary, levels.FormatLevel(vary, v), err)
	}
	if err != nil {
		return lv, err
	}
	levels.Judge(lv.Result, w.Plan, o.SLO)
	lv.SLO = lv.Result.Thresholds
	lv.Pass = LevelPass(lv)
	if w.Stderr != nil {
		fmt.Fprintf(w.Stderr, "%s %s: %d segments merged, %d requests\n", vary, levels.FormatLevel(vary, v), w.Workers, lv.Result.Totals.Requests)
	}
	return lv, nil
}

// runSegment runs one segment of the level and waits for it, as a worker
// of this process (dist.RunWorker): it dies with this process, and only
// this process passes it a signal: the one that ended ctx (Ctrl-C or
// SIGTERM), once; the segment then stops and writes its partial.
func (w LevelWorkers) runSegment(ctx context.Context, vary string, v float64, o levels.Options, seg segment.Segment, start time.Time, out string) error {
	args := []string{"sweep", w.PlanFile, "--" + vary, strconv.FormatFloat(v, 'f', -1, 64),
		"--hold", o.Hold.String(), "--ramp", o.Ramp.String(),
		"--segment", seg.String(), "--start-at", start.UTC().Format(time.RFC3339Nano), "-o", out, "-q"}
	args = append(args, w.Args...)
	logf, err := os.Create(out + ".log")
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, w.Bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(stopSignal(ctx)) }
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
