package session

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/result"
)

// workersLive is what Workers.Snapshot keeps between calls: each
// segment's last checkpoint read, by file time, so an unchanged file is
// not parsed again.
type workersLive struct {
	mu   sync.Mutex
	seen map[int]segCheckpoint
}

type segCheckpoint struct {
	mod time.Time
	res *result.Result
}

// Snapshot is the run so far for the sinks (--output, --dashboard): the
// merge of the checkpoints the workers have written (each replaces
// seg-<i>.json atomically, every 5 s), so it trails the run by up to a
// checkpoint. Files older than this test's start are a previous run's and
// are left out. The series keep only the intervals every segment has
// reached, so a sink that writes an interval once (csv) never writes one
// that a segment is still filling. Nil until a checkpoint was written.
func (e *Workers) Snapshot(reason string) *result.Result {
	// One that is written (a quit, with its reason) keeps every segment's
	// series whole, so they add up to its totals.
	return e.snapshot(reason, reason == "")
}

// snapshot is Snapshot; common keeps only the intervals every segment has
// reached. Without it every segment's series is kept whole, so the series
// add up to the totals, as a checkpoint's must.
func (e *Workers) snapshot(reason string, common bool) *result.Result {
	e.mu.Lock()
	if e.load != nil {
		// The workers are done and merged; only the teardown runs, or has
		// just ended. The load is whole, since every request of it was
		// waited for. Copied under the lock, as Execute writes the
		// teardown into it.
		cp := withWorkflow(e.load)
		if reason != "" && !e.tornDown {
			cp.Workflow.Teardown = &result.Phase{Error: "cut off before it finished: " + reason}
		}
		e.mu.Unlock()
		return cp
	}
	e.mu.Unlock()
	w := &e.live
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[int]segCheckpoint{}
	}
	var rs []*result.Result
	var names []string
	for i := 0; i < e.Local.Workers; i++ {
		path := filepath.Join(e.Local.Dir, fmt.Sprintf("seg-%d.json", i))
		st, err := os.Stat(path)
		if err != nil || st.ModTime().Before(e.Local.StartAt) {
			continue
		}
		c := w.seen[i]
		if c.res == nil || !st.ModTime().Equal(c.mod) {
			r, err := result.Read(path)
			if err != nil {
				continue // being replaced: the last one read stands
			}
			c = segCheckpoint{mod: st.ModTime(), res: r}
			w.seen[i] = c
		}
		rs = append(rs, c.res)
		names = append(names, filepath.Base(path))
	}
	if len(rs) == 0 {
		return nil
	}
	// merge builds new series and leaves its inputs as read.
	m, err := merge.Options{Names: names}.Results(rs)
	if err != nil {
		return nil
	}
	if iv := m.Series.IntervalS; iv > 0 && common {
		// Where each segment's series ends on the merged clock; a segment
		// with no checkpoint yet has reached no interval.
		common := -1
		if len(rs) < e.Local.Workers {
			common = 0
		}
		for _, r := range rs {
			end := int(math.Round(r.Run.Started.Sub(m.Run.Started).Seconds()/iv)) + len(r.Series.T)
			if common < 0 || end < common {
				common = max(end, 0)
			}
		}
		truncateSeries(&m.Series, common)
	}
	m.Run.Partial = true
	m.Run.PartialReason = reason
	if len(rs) < e.Local.Workers {
		so := fmt.Sprintf("%d of %d segments so far", len(rs), e.Local.Workers)
		if common {
			m.Run.PartialReason = so
		} else {
			m.Run.PartialReason = reason + "; " + so
		}
	}
	return m
}

// truncateSeries keeps the first n intervals of every series.
func truncateSeries(s *result.Series, n int) {
	cut := func(v []int64) []int64 {
		if len(v) > n {
			return v[:n]
		}
		return v
	}
	if len(s.T) > n {
		s.T = s.T[:n]
	}
	if len(s.Target) > n {
		s.Target = s.Target[:n]
	}
	for _, p := range []*[]int64{&s.Started, &s.Completed, &s.OK, &s.P50US, &s.P95US, &s.P99US, &s.Active, &s.InFlight, &s.Dropped, &s.LagP99US, &s.Connections} {
		*p = cut(*p)
	}
	for k, v := range s.Failed {
		s.Failed[k] = cut(v)
	}
}

// checkpoints replaces the result file with the merge of the workers'
// checkpoints every CheckpointEvery while they run, as a run of one
// process checkpoints its own: a coordinator killed outright (kill -9, a
// CI job's timeout) still leaves what the workers had measured, marked
// partial. The returned function stops it and waits for it.
func (e *Workers) checkpoints(save func(*result.Result)) (stop func()) {
	if save == nil {
		return func() {}
	}
	every := e.CheckpointEvery
	if every <= 0 {
		every = defaultCheckpointEvery
	}
	quit, done := make(chan struct{}), make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			reason := fmt.Sprintf("run still in progress (the coordinator's checkpoint at %.0fs, merged from the workers' own); the process ended before the final write",
				time.Since(began).Seconds())
			if cp := e.snapshot(reason, false); cp != nil {
				save(cp)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
		})
	}
}

// defaultCheckpointEvery is run's default, which the workers use.
const defaultCheckpointEvery = 5 * time.Second
