package result

import (
	"fmt"
	"math"
	"sort"
)

// Check verifies the invariants every reader relies on, so a file edited
// by hand (or cut short) is refused rather than read as the truth: counts
// are not negative and add up (successful + failed = requests, classes sum
// to failed, the HTTP steps sum to the totals), histograms decode and
// agree with their counts, and every per-interval series has one value per
// interval at a positive interval. Errors name the field and what was
// expected.
func (r *Result) Check() error {
	for _, check := range []func() error{
		r.checkTotals,
		r.checkStepsAddUp,
		r.Series.check,
		func() error { return checkLatency("generator.lag", r.Generator.Lag) },
		r.checkMonitors,
		r.checkConnections,
		r.checkLevels,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkTotals checks the run's own totals, before they are compared with
// the steps they add up from.
func (r *Result) checkTotals() error {
	if err := checkCounts("totals", r.Totals.Requests, r.Totals.Successful, r.Totals.Failed, r.Totals.ByClass); err != nil {
		return err
	}
	if r.Totals.Iterations < 0 {
		return fmt.Errorf("totals.iterations is %d, expected 0 or more", r.Totals.Iterations)
	}
	if err := checkLatency("totals.latency_ok", r.Totals.LatencyOK); err != nil {
		return err
	}
	if err := checkLatency("totals.latency_all", r.Totals.LatencyAll); err != nil {
		return err
	}
	return r.TLS.Check() // tls.go
}

// checkStepsAddUp checks every step and that the HTTP steps sum to the
// totals.
func (r *Result) checkStepsAddUp() error {
	sum, err := r.sumHTTPSteps()
	if err != nil {
		return err
	}
	t := r.Totals
	for _, f := range []struct {
		name      string
		have, sum int64
	}{
		{"requests", t.Requests, sum.Requests},
		{"successful", t.Successful, sum.Successful},
		{"failed", t.Failed, sum.Failed},
		{"latency_ok.count", t.LatencyOK.Count, sum.LatencyOK.Count},
		{"latency_all.count", t.LatencyAll.Count, sum.LatencyAll.Count},
	} {
		if f.have != f.sum {
			return fmt.Errorf("totals.%s is %d, expected %d (the sum over the HTTP steps)", f.name, f.have, f.sum)
		}
	}
	for _, c := range sortedKeys(sum.ByClass, t.ByClass) {
		if t.ByClass[c] != sum.ByClass[c] {
			return fmt.Errorf("totals.by_class.%s is %d, expected %d (the sum over the HTTP steps)", c, t.ByClass[c], sum.ByClass[c])
		}
	}
	return nil
}

// sumHTTPSteps checks each step on its own and sums the HTTP ones.
// Connection scenarios' operations are steps too, but the totals are the
// HTTP requests' only (connections.go).
func (r *Result) sumHTTPSteps() (Totals, error) {
	conn := map[string]bool{}
	if r.Connections != nil {
		for _, c := range r.Connections.Scenarios {
			conn[c.Scenario] = true
		}
	}
	var sum Totals
	sum.ByClass = map[string]int64{}
	for _, s := range r.Steps {
		if err := s.check(); err != nil {
			return sum, err
		}
		if conn[s.Scenario] {
			continue
		}
		sum.Requests += s.Requests
		sum.Successful += s.Successful
		sum.Failed += s.Failed
		for c, n := range s.ByClass {
			sum.ByClass[c] += n
		}
		sum.LatencyOK.Count += s.LatencyOK.Count
		sum.LatencyAll.Count += s.LatencyAll.Count
	}
	return sum, nil
}

func (s *Step) check() error {
	where := fmt.Sprintf("step %q", s.Name)
	if err := checkCounts(where, s.Requests, s.Successful, s.Failed, s.ByClass); err != nil {
		return err
	}
	if err := checkLatency(where+" latency_ok", s.LatencyOK); err != nil {
		return err
	}
	if err := checkLatency(where+" latency_all", s.LatencyAll); err != nil {
		return err
	}
	// The Errors table is read as exact counts; a hand-edited one that
	// no longer adds up to its classes would be carried into merges.
	if err := s.CheckErrorCounts(); err != nil {
		return fmt.Errorf("%v (errors and other_errors must add up to by_class)", err)
	}
	return nil
}

func (r *Result) checkMonitors() error {
	for _, k := range sortedKeys(r.Monitors) {
		m := r.Monitors[k]
		if len(m.V) != len(m.T) {
			return fmt.Errorf("monitors.%s.v has %d values, expected %d (one per entry of its t)", k, len(m.V), len(m.T))
		}
	}
	return nil
}

func (r *Result) checkConnections() error {
	if r.Connections == nil {
		return nil
	}
	for _, c := range r.Connections.Scenarios {
		where := fmt.Sprintf("connections scenario %q", c.Scenario)
		for _, f := range []struct {
			name string
			n    int64
		}{{"attempts", c.Attempts}, {"opened", c.Opened}, {"failed", c.Failed}, {"peak_open", c.PeakOpen}, {"open_at_end", c.OpenAtEnd}} {
			if f.n < 0 {
				return fmt.Errorf("%s: %s is %d, expected 0 or more", where, f.name, f.n)
			}
		}
		if c.Opened+c.Failed != c.Attempts {
			return fmt.Errorf("%s: opened %d + failed %d != attempts %d", where, c.Opened, c.Failed, c.Attempts)
		}
	}
	return nil
}

func (r *Result) checkLevels() error {
	for i, l := range r.Levels {
		if l.Result == nil {
			continue
		}
		if err := l.Result.Check(); err != nil {
			return fmt.Errorf("levels[%d] (%s %g): %w", i, l.Vary, l.Value, err)
		}
	}
	return nil
}

func checkCounts(where string, requests, ok, failed int64, byClass map[string]int64) error {
	for _, f := range []struct {
		name string
		n    int64
	}{{"requests", requests}, {"successful", ok}, {"failed", failed}} {
		if f.n < 0 {
			return fmt.Errorf("%s: %s is %d, expected 0 or more", where, f.name, f.n)
		}
	}
	if ok+failed != requests {
		return fmt.Errorf("%s: successful %d + failed %d != requests %d", where, ok, failed, requests)
	}
	var sum int64
	for _, c := range sortedKeys(byClass) {
		n := byClass[c]
		if n < 0 {
			return fmt.Errorf("%s: by_class.%s is %d, expected 0 or more", where, c, n)
		}
		sum += n
	}
	if sum != failed {
		return fmt.Errorf("%s: failure classes sum to %d but failed is %d", where, sum, failed)
	}
	return nil
}

func checkLatency(where string, l Latency) error {
	if l.Count < 0 {
		return fmt.Errorf("%s: count is %d, expected 0 or more", where, l.Count)
	}
	if _, err := l.Histogram(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// check holds the series to one value per interval: a shortened column
// would shift every chart and sum after it.
func (s Series) check() error {
	n := len(s.T)
	switch {
	case math.IsNaN(s.IntervalS) || math.IsInf(s.IntervalS, 0) || s.IntervalS < 0:
		return fmt.Errorf("series.interval_s is %v, expected a positive number of seconds", s.IntervalS)
	case s.IntervalS == 0 && n > 0:
		return fmt.Errorf("series.interval_s is 0, expected a positive number of seconds")
	}
	prev := math.Inf(-1)
	for i, t := range s.T {
		if math.IsNaN(t) || math.IsInf(t, 0) || t < prev {
			return fmt.Errorf("series.t[%d] is %v, expected a number no smaller than the one before", i, t)
		}
		prev = t
	}
	counts := []struct {
		name string
		col  []int64
	}{
		{"started", s.Started}, {"completed", s.Completed}, {"ok", s.OK},
		{"p50_us", s.P50US}, {"p95_us", s.P95US}, {"p99_us", s.P99US},
		{"active", s.Active}, {"in_flight", s.InFlight}, {"dropped", s.Dropped}, {"lag_p99_us", s.LagP99US},
	}
	for _, c := range sortedKeys(s.Failed) {
		counts = append(counts, struct {
			name string
			col  []int64
		}{"failed." + c, s.Failed[c]})
	}
	if len(s.Connections) > 0 {
		counts = append(counts, struct {
			name string
			col  []int64
		}{"connections", s.Connections})
	}
	for _, c := range counts {
		if len(c.col) != n {
			return fmt.Errorf("series.%s has %d values, expected %d (one per entry of series.t)", c.name, len(c.col), n)
		}
		for i, v := range c.col {
			if v < 0 {
				return fmt.Errorf("series.%s[%d] is %d, expected 0 or more", c.name, i, v)
			}
		}
	}
	if len(s.Target) != n {
		return fmt.Errorf("series.target has %d values, expected %d (one per entry of series.t)", len(s.Target), n)
	}
	return nil
}

// sortedKeys is the keys of the maps in order, so the first problem named
// is the same on every read of one file.
func sortedKeys[V any](ms ...map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
