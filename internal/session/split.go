package session

import (
	"fmt"
	"strconv"
	"time"

	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// DefaultStartGrace is --start-grace's default: how late after --start-at
// a segment may still start.
const DefaultStartGrace = run.DefaultStartGrace

// Split is how a run is spread over processes: one segment of a test
// (--segment, --start-at; what a Kubernetes pod runs), or N local segment
// processes merged into one result (--workers).
type Split struct {
	Segment    string // INDEX/COUNT
	StartAt    string // RFC 3339
	StartGrace time.Duration
	Workers    int
	Emit       bool   // --emit-result
	DataDir    string // --data-dir
}

// seg is the segment to run; the whole test without --segment.
func (d Split) seg() (segment.Segment, error) {
	if d.Segment == "" {
		return segment.Whole, nil
	}
	s, err := segment.Parse(d.Segment)
	if err != nil {
		return s, Fail(ExitUsage, fmt.Errorf("--segment: %v", err))
	}
	return s, nil
}

// processes is how many processes share the run: the segment count of
// --segment i/N (each a process), else 1.
func (d Split) processes() int {
	s, err := d.seg()
	if err != nil {
		return 1
	}
	return max(s.Norm().Count, 1)
}

// load loads the plan as the run's flags say: its data from --data-dir,
// and for one segment only the segment's share of each unique source, so
// a pod of an N-segment run holds 1/N of a large file (plan.LoadOptions).
// Every check of a whole run is made (file present and regular, columns,
// rows), on the segment's share.
func (d Split) load(pr Process, path string, allow []string) (*plan.Plan, error) {
	s, err := d.seg()
	if err != nil {
		return nil, err
	}
	o := plan.LoadOptions{DataDir: d.DataDir, AllowFiles: allow}
	if !s.IsWhole() {
		n := s.Norm()
		o.Index, o.Count = n.Index, n.Count
	}
	return pr.Load(path, o)
}

// parseStartAt reads --start-at.
func parseStartAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, Fail(ExitUsage, fmt.Errorf("--start-at %q: expected an RFC 3339 time such as 2026-05-01T12:00:00Z", s))
	}
	return t, nil
}

// applySplit puts the segment and start time into the run options.
func (pr Process) applySplit(o *run.Options, d Split, p *plan.Plan) error {
	s, err := d.seg()
	if err != nil {
		return err
	}
	o.Segment = s
	o.StartGrace = d.StartGrace
	if !s.IsWhole() {
		// A worker of --workers: its coordinator ran the setup once for
		// the test and tears down after it.
		if o.Lifecycle, err = run.Received(p, pr.lookupEnv); err != nil {
			return Fail(ExitRun, err)
		}
		if err := pr.receivedSeed(p); err != nil {
			return Fail(ExitRun, err)
		}
	}
	if d.StartAt != "" {
		if o.StartAt, err = parseStartAt(d.StartAt); err != nil {
			return err
		}
	}
	if !s.IsWhole() {
		fmt.Fprintln(pr.Stderr, segment.Of(p, s))
	}
	if !o.StartAt.IsZero() {
		if wait := time.Until(o.StartAt); wait > 0 {
			fmt.Fprintf(pr.Stderr, "waiting %v for the start time %s\n", wait.Round(time.Millisecond), o.StartAt.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// seedEnv hands the coordinator's seed to its workers (--workers), so
// that every segment draws from the one seed the merged result records.
const seedEnv = "STAMPEDE_SEED"

// receivedSeed makes the coordinator's seed the plan's, for a worker whose
// plan gives none.
func (pr Process) receivedSeed(p *plan.Plan) error {
	text, ok := pr.lookupEnv(seedEnv)
	if !ok || p.Seed != nil {
		return nil
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return fmt.Errorf("the coordinator's seed (%s=%q): %v", seedEnv, text, err)
	}
	p.Seed = &v
	return nil
}
