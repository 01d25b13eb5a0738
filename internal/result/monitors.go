package result

import (
	"math"
	"strings"
)

// MonitorSeries is one server-side metric sampled during the run, keyed in
// Result by names like "postgres.connections.active" or
// "process[nginx].cpu_pct". T is seconds from the run start, on the same
// clock as Series.T, so the two can be drawn on one axis. Counters are
// stored as per-second rates (Unit ends in "/s"), so every value can be
// read on its own without the one before it.
type MonitorSeries struct {
	// Unit is one of: count, bytes, pct (0..100), ratio (0..1), s, 1/s,
	// bytes/s, or whatever a scraped Prometheus metric is (empty).
	Unit string    `json:"unit"`
	T    []float64 `json:"t"`
	V    []float64 `json:"v"`
}

// MonitorProblem is something that went wrong with a monitor: it could not
// connect at the start, a sample failed or overran its interval, or it did
// not stop in time. Repeats of the same message are folded into one entry
// (Count, LastT) so a dead server costs one line, not one per second.
type MonitorProblem struct {
	Monitor string `json:"monitor"`
	// Severity is "error" for a required monitor that could not start,
	// "warn" otherwise.
	Severity string  `json:"severity"`
	Message  string  `json:"message"`
	T        float64 `json:"t"`
	LastT    float64 `json:"last_t,omitempty"`
	Count    int     `json:"count,omitempty"`
}

// MonitorStats sums a series over [from, to] seconds, both ends included.
type MonitorStats struct {
	N             int
	Min, Avg, Max float64
	Last          float64
}

// Stats is what thresholds and the summary table read: thresholds on
// monitor series need a figure over the steady part of the run, not the
// ramp, so the window is the caller's.
func (s MonitorSeries) Stats(from, to float64) MonitorStats {
	st := MonitorStats{Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	for i, t := range s.T {
		if t < from || t > to || i >= len(s.V) {
			continue
		}
		v := s.V[i]
		if math.IsNaN(v) {
			continue
		}
		st.N++
		sum += v
		st.Min = min(st.Min, v)
		st.Max = max(st.Max, v)
		st.Last = v
	}
	if st.N == 0 {
		return MonitorStats{}
	}
	st.Avg = sum / float64(st.N)
	return st
}

// SplitMonitorKey splits a series key into its monitor label and metric:
// "postgres[db.main].connections.active" → "postgres[db.main]",
// "connections.active". A name in brackets may itself hold dots.
func SplitMonitorKey(key string) (label, metric string) {
	i := strings.IndexAny(key, ".[")
	if i < 0 {
		return key, ""
	}
	if key[i] == '[' {
		j := strings.IndexByte(key[i:], ']')
		if j < 0 {
			return key, ""
		}
		i += j + 1
		if i >= len(key) || key[i] != '.' {
			return key[:i], strings.TrimPrefix(key[i:], ".")
		}
	}
	return key[:i], key[i+1:]
}

// Shifted is the series with off seconds added to every sample time, for
// moving it onto another clock; s itself is not changed.
func (s MonitorSeries) Shifted(off float64) MonitorSeries {
	t := make([]float64, len(s.T))
	for i, v := range s.T {
		t[i] = v + off
	}
	s.T = t
	s.V = append([]float64(nil), s.V...)
	return s
}
