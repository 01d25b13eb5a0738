package result

import (
	"strings"
	"testing"
)

// withSeries gives r a consistent series of n intervals.
func withSeries(r *Result, n int) *Result {
	z := func() []int64 { return make([]int64, n) }
	r.Series = Series{IntervalS: 1, T: make([]float64, n), Started: z(), Completed: z(), OK: z(),
		P50US: z(), P95US: z(), P99US: z(), Active: z(), InFlight: z(), Dropped: z(), LagP99US: z(),
		Target: make([]float64, n), Failed: map[string][]int64{"status_5xx": z()}}
	for i := range r.Series.T {
		r.Series.T[i] = float64(i)
	}
	return r
}

// Check refuses what a hand edit leaves behind, naming the field and what
// was expected.
func TestCheckRefusesInconsistentResults(t *testing.T) {
	cases := []struct {
		name string
		edit func(r *Result)
		want string
	}{
		{"totals removed", func(r *Result) { r.Totals = Totals{} }, "totals.requests is 0, expected 4"},
		{"by_class total off", func(r *Result) {
			r.Totals.Failed, r.Totals.Successful = 1, 3
			r.Totals.ByClass = map[string]int64{"timeout": 1}
		}, "totals.successful is 3, expected 4"},
		{"series shortened", func(r *Result) { r.Series.OK = r.Series.OK[:2] }, "series.ok has 2 values, expected 3"},
		{"failed column shortened", func(r *Result) { r.Series.Failed["status_5xx"] = nil }, "series.failed.status_5xx has 0 values, expected 3"},
		{"target shortened", func(r *Result) { r.Series.Target = nil }, "series.target has 0 values"},
		{"interval 0", func(r *Result) { r.Series.IntervalS = 0 }, "series.interval_s is 0, expected a positive"},
		{"interval negative", func(r *Result) { r.Series.IntervalS = -1 }, "series.interval_s is -1"},
		{"t backwards", func(r *Result) { r.Series.T[2] = 0.5 }, "series.t[2] is 0.5"},
		{"negative series", func(r *Result) { r.Series.Completed[1] = -3 }, "series.completed[1] is -3"},
		{"negative class", func(r *Result) {
			r.Steps[0].ByClass = map[string]int64{"timeout": -1, "other": 1}
		}, `by_class.timeout is -1`},
		{"monitor shortened", func(r *Result) {
			r.Monitors = map[string]MonitorSeries{"host.cpu": {T: []float64{0, 1}, V: []float64{3}}}
		}, "monitors.host.cpu.v has 1 values, expected 2"},
		{"errors table off", func(r *Result) {
			r.Steps[0].Requests, r.Steps[0].Failed = 5, 1
			r.Steps[0].ByClass = map[string]int64{"timeout": 1}
			r.Steps[0].Errors = []StepError{{Class: "timeout", Message: "timeout after 1s", Count: 7}}
		}, `class timeout counts 1, its messages 7`},
		{"level", func(r *Result) {
			bad := withSeries(small(t, 1, false), 1)
			bad.Series.IntervalS = 0
			r.Levels = []Level{{Vary: "users", Value: 5, Result: bad}}
		}, "levels[0] (users 5): series.interval_s is 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := withSeries(small(t, 4, false), 3)
			if err := r.Check(); err != nil {
				t.Fatalf("untouched: %v", err)
			}
			c.edit(r)
			err := r.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// The steps of connection scenarios are not part of the totals, and an
// empty series needs no interval (results built before the first tick).
func TestCheckAcceptsWhatStampedeWrites(t *testing.T) {
	r := small(t, 4, false)
	conn := small(t, 7, false).Steps[0]
	conn.Scenario, conn.Group = "hub", "signalr"
	r.Steps = append(r.Steps, conn)
	r.Connections = &Connections{Scenarios: []ConnScenario{{Scenario: "hub", Attempts: 3, Opened: 2, Failed: 1}}}
	r.Series = Series{}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}
