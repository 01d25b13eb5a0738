package gate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// run builds a one-step result with ok successes and the given failures,
// with a healthy generator unless the case changes it.
func run(t *testing.T, model string, ok int, fails map[sample.Class]int64) *result.Result {
	r := build(t, result.RunInfo{DurationS: 10, Model: model},
		stepSpec{scenario: "s", name: "GET /", okUS: spread(ok, 1000, 20_000), fails: fails, failUS: 5000})
	r.Generator = result.Generator{Lag: lag(t, spread(1000, 5, 300)...), CPUSeconds: 1, CPUUtil: 0.2, Cores: 4}
	return r
}

func TestIndicators(t *testing.T) {
	cases := []struct {
		name    string
		res     func(t *testing.T) *result.Result
		ids     []string
		message string // a part of the first indicator's message
		evKey   string // an evidence key the first indicator must carry
	}{
		{
			name: "healthy open run has no findings",
			res:  func(t *testing.T) *result.Result { return run(t, "open", 1000, nil) },
		},
		{
			name: "healthy closed run gets only the closed-model note",
			res:  func(t *testing.T) *result.Result { return run(t, "closed", 1000, nil) },
			ids:  []string{"closed_model"}, message: "use an open model (rate:) for that",
		},
		{
			name: "a paced closed run measures from intended start, so no note",
			res: func(t *testing.T) *result.Result {
				r := run(t, "closed", 1000, nil)
				r.Run.Paced = true
				return r
			},
		},
		{
			name: "success below 95% is overloaded",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 940, map[sample.Class]int64{sample.Check: 60})
			},
			// Every failure is one class, so that class is named too.
			ids: []string{"overloaded", "errors_dominated"}, message: "Success rate is below 95% - system may be overloaded", evKey: "success_rate",
		},
		{
			name: "exactly 95% success is not overloaded",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 950, map[sample.Class]int64{sample.Check: 50})
			},
		},
		{
			name: "over 5% server errors, with the seed's wording",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 940, map[sample.Class]int64{sample.ServerError: 60})
			},
			ids: []string{"overloaded", "errors_dominated", "server_errors"}, message: "Success rate is below 95%",
		},
		{
			name: "exactly 5% server errors is tolerated",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 950, map[sample.Class]int64{sample.ServerError: 50})
			},
		},
		{
			name: "any 429 is reported",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 995, map[sample.Class]int64{sample.RateLimited: 5})
			},
			ids: []string{"rate_limited"}, message: "5 requests were rate limited (429, 0.50%)", evKey: "rate_limited",
		},
		{
			name: "a few timeouts",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 990, map[sample.Class]int64{sample.Timeout: 10})
			},
			ids: []string{"timeouts"}, message: "10 requests timed out (1.00%) - check the slowest endpoints", evKey: "timeout_rate",
		},
		{
			name: "5% timeouts hint at queueing behind a pool",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 950, map[sample.Class]int64{sample.Timeout: 50})
			},
			ids: []string{"timeouts"}, message: "50 requests timed out (5.00%) - this many timeouts usually means requests queue behind a full connection or worker pool",
		},
		{
			name: "connection errors name each kind and its cause",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 992, map[sample.Class]int64{sample.ConnRefused: 5, sample.PortExhausted: 3})
			},
			ids:     []string{"connection_errors"},
			message: "8 connection errors (refused 5, port exhausted 3) - refused suggests the server's listen backlog or connection pool is full (or it is down); port exhausted means the generator ran out of local ports",
			evKey:   "port_exhausted",
		},
		{
			name: "resets and fd limits",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 997, map[sample.Class]int64{sample.ConnReset: 2, sample.FDLimit: 1})
			},
			ids: []string{"connection_errors"}, message: "3 connection errors (reset 2, fd limit 1) - reset suggests", evKey: "fd_limit",
		},
		{
			name: "dropped arrivals mean the offered load was not delivered",
			res: func(t *testing.T) *result.Result {
				return run(t, "open", 990, map[sample.Class]int64{sample.Dropped: 10})
			},
			ids: []string{"dropped"}, message: "10 arrivals were dropped (1.00% of offered load) because max_in_flight was reached - the offered load was not delivered", evKey: "dropped",
		},
		{
			name: "generator lag p99 over 1ms makes results suspect",
			res: func(t *testing.T) *result.Result {
				r := run(t, "open", 1000, nil)
				r.Generator.Lag = lag(t, append(spread(980, 5, 300), spread(20, 5000, 5000)...)...)
				return r
			},
			ids: []string{"generator_lag"}, message: "Generator lag p99 is 5.003ms (over 1ms) - the generator could not start work on time", evKey: "lag_p99_us",
		},
		{
			name: "lag p99 of exactly 1ms is acceptable",
			res: func(t *testing.T) *result.Result {
				r := run(t, "open", 1000, nil)
				r.Generator.Lag = lag(t, spread(100, 1000, 1000)...)
				return r
			},
		},
		{
			name: "lag is read from the histogram, not the stored figure",
			res: func(t *testing.T) *result.Result {
				r := run(t, "open", 1000, nil)
				r.Generator.Lag.P99US = 50_000
				return r
			},
		},
		{
			name: "generator at 90% CPU was CPU bound",
			res: func(t *testing.T) *result.Result {
				r := run(t, "open", 1000, nil)
				r.Generator.CPUUtil = 0.9
				return r
			},
			ids: []string{"generator_cpu"}, message: "Generator CPU was at 90.00% of 4 cores - the generator was CPU bound", evKey: "cpu_util",
		},
		{
			name: "generator at 89% CPU is fine",
			res: func(t *testing.T) *result.Result {
				r := run(t, "open", 1000, nil)
				r.Generator.CPUUtil = 0.89
				return r
			},
		},
		{
			name: "partial runs say why",
			res: func(t *testing.T) *result.Result {
				r := run(t, "open", 1000, nil)
				r.Run.Partial, r.Run.PartialReason = true, "interrupted by SIGINT"
				return r
			},
			ids: []string{"partial"}, message: "Partial result (interrupted by SIGINT) - figures cover only part of the planned run",
		},
		{
			name: "findings come in a fixed order, the note last",
			res: func(t *testing.T) *result.Result {
				r := run(t, "closed", 800, map[sample.Class]int64{
					sample.ServerError: 100, sample.RateLimited: 10, sample.Timeout: 60, sample.ConnReset: 10, sample.Dropped: 20,
				})
				r.Generator.CPUUtil = 0.95
				r.Generator.Lag = lag(t, spread(100, 3000, 3000)...)
				r.Run.Partial = true
				return r
			},
			ids: []string{"overloaded", "server_errors", "rate_limited", "timeouts", "connection_errors", "dropped",
				"generator_lag", "generator_cpu", "partial", "closed_model"},
			message: "Success rate is below 95%",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Indicators(c.res(t))
			var ids []string
			for _, in := range got {
				ids = append(ids, in.ID)
				wantSev := SeverityWarn
				if in.ID == "closed_model" {
					wantSev = SeverityInfo
				}
				if in.Severity != wantSev {
					t.Errorf("%s has severity %q, want %q", in.ID, in.Severity, wantSev)
				}
			}
			if !reflect.DeepEqual(ids, c.ids) {
				t.Fatalf("indicators %v, want %v", ids, c.ids)
			}
			if len(got) == 0 {
				return
			}
			if !strings.Contains(got[0].Message, c.message) {
				t.Errorf("message %q lacks %q", got[0].Message, c.message)
			}
			if c.evKey != "" {
				if _, ok := got[0].Evidence[c.evKey]; !ok {
					t.Errorf("evidence %v lacks %q", got[0].Evidence, c.evKey)
				}
			}
		})
	}
}

// The seed's own figures: 7233 server errors of 24019 requests.
func TestIndicatorsSeedWording(t *testing.T) {
	r := run(t, "open", 9326, map[sample.Class]int64{sample.ServerError: 7233, sample.Other: 24019 - 9326 - 7233})
	got := Indicators(r)
	want := []string{
		"Success rate is below 95% - system may be overloaded",
		"High server error rate (30.11%) - check application logs",
	}
	if len(got) != 2 || got[0].Message != want[0] || got[1].Message != want[1] {
		t.Errorf("got %+v\nwant messages %q", got, want)
	}
}
