// Package csv writes a run's per-second series to a CSV file as the run
// goes: one row per interval, written once the interval is over, so the
// file can be tailed or charted while the test runs.
package csv

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// Sink is the CSV output.
type Sink struct {
	name    string
	f       *os.File
	w       *csv.Writer
	written int // intervals written so far
	err     error
}

// Header is the file's first row.
func Header() []string {
	h := []string{"time", "t_s", "target", "active", "in_flight", "started", "completed", "ok", "failed"}
	for _, c := range sample.FailureClasses() {
		h = append(h, "failed_"+c.String())
	}
	return append(h, "p50_ms", "p95_ms", "p99_ms", "dropped", "lag_p99_ms", "connections")
}

// New creates (or truncates) path and writes the header.
func New(name, path string) (*Sink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("csv output: %v", err)
	}
	s := &Sink{name: name, f: f, w: csv.NewWriter(f)}
	_ = s.w.Write(Header())
	s.w.Flush()
	s.err = s.w.Error()
	return s, nil
}

// Name implements output.Sink.
func (s *Sink) Name() string { return s.name }

// Sample implements output.Sink: the intervals that are over (all but
// the last, which is still filling) and not yet written.
func (s *Sink) Sample(r *result.Result) {
	if r == nil || s.err != nil {
		return
	}
	s.write(r, len(r.Series.T)-1)
}

// Close implements output.Sink: the final result's remaining intervals,
// the last included.
func (s *Sink) Close(final *result.Result) error {
	if final != nil && s.err == nil {
		s.write(final, len(final.Series.T))
	}
	if err := s.f.Close(); err != nil && s.err == nil {
		s.err = err
	}
	if s.err != nil {
		return fmt.Errorf("csv output: %v", s.err)
	}
	return nil
}

func ms(us []int64, i int) string {
	if i >= len(us) {
		return ""
	}
	return strconv.FormatFloat(float64(us[i])/1000, 'f', 3, 64)
}

func num(v []int64, i int) string {
	if i >= len(v) {
		return ""
	}
	return strconv.FormatInt(v[i], 10)
}

func (s *Sink) write(r *result.Result, upto int) {
	se := r.Series
	for i := s.written; i < upto; i++ {
		at := r.Run.Started.Add(time.Duration(se.T[i] * float64(time.Second)))
		var failed int64
		for _, c := range sample.FailureClasses() {
			if v := se.Failed[c.String()]; i < len(v) {
				failed += v[i]
			}
		}
		target := ""
		if i < len(se.Target) {
			target = strconv.FormatFloat(se.Target[i], 'f', -1, 64)
		}
		row := []string{at.UTC().Format(time.RFC3339Nano), strconv.FormatFloat(se.T[i], 'f', -1, 64), target,
			num(se.Active, i), num(se.InFlight, i), num(se.Started, i), num(se.Completed, i), num(se.OK, i), strconv.FormatInt(failed, 10)}
		for _, c := range sample.FailureClasses() {
			v := se.Failed[c.String()]
			if i < len(v) {
				row = append(row, strconv.FormatInt(v[i], 10))
			} else {
				row = append(row, "0")
			}
		}
		row = append(row, ms(se.P50US, i), ms(se.P95US, i), ms(se.P99US, i), num(se.Dropped, i), ms(se.LagP99US, i), num(se.Connections, i))
		_ = s.w.Write(row)
	}
	if upto > s.written {
		s.written = upto
	}
	s.w.Flush()
	if err := s.w.Error(); err != nil {
		s.err = err
	}
}
