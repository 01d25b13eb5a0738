package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const (
	ms = int64(1000)
	s  = 1000 * ms
)

// healthyClosed is the seed's shape: a closed run with reads and writes
// groups and nothing failing.
func healthyClosed(t *testing.T) *result.Result {
	return build(t, result.Result{
		Plan: result.PlanInfo{Name: "quickstart", File: "examples/quickstart.yaml", Target: "http://127.0.0.1:8080"},
		Run:  result.RunInfo{DurationS: 30.06, Model: "closed", LatencyFrom: "send", MaxUsers: 20, Segment: result.Segment{Count: 1}},
		Generator: result.Generator{
			Lag: lagOf(t, dist{5, 180, 3}, 3000), CPUSeconds: 1.2, CPUPerRequestUS: 400, CPUUtil: 0.05, Cores: 8, MaxRSS: 48_300_000,
		},
		Indicators: []result.Indicator{{ID: "closed_model", Severity: "info", Message: "Closed model: latencies are service times measured from the actual send; under overload a closed model slows its own arrival rate, so these are not what users would see at a fixed arrival rate - use an open model (rate:) for that"}},
	},
		stepSpec{scenario: "voter", name: "GET parties", group: "reads", ok: 1500, okLat: dist{3265, 72702, 2}},
		stepSpec{scenario: "voter", name: "GET results", group: "reads", ok: 500, okLat: dist{697, 9 * ms, 1.5}},
		stepSpec{scenario: "voter", name: "POST vote", group: "writes", ok: 1000, okLat: dist{8 * ms, 66 * ms, 2}},
	)
}

// overloaded fails in every class there is, across two scenarios that
// share a step name.
func overloaded(t *testing.T) *result.Result {
	var fails []failure
	for i, c := range sample.FailureClasses() {
		fails = append(fails, failure{class: c, n: int64(10 * (i + 1)), lat: dist{1 * ms, 40 * ms, 1}})
	}
	fails[3] = failure{class: sample.Timeout, n: 2400, lat: dist{30 * s, 30*s + 5*ms, 1}}
	fails[2] = failure{class: sample.ServerError, n: 7233, lat: dist{2 * ms, 900 * ms, 2}}
	return build(t, result.Result{
		Plan: result.PlanInfo{Name: "scalection", File: "plans/scalection.yaml", Target: "https://vote.example.test"},
		Run:  result.RunInfo{DurationS: 61.4, Model: "open", LatencyFrom: "intended", PeakRate: 1000, Segment: result.Segment{Count: 1}},
		Generator: result.Generator{
			Lag: lagOf(t, dist{10, 400, 4}, 50000), CPUSeconds: 30, CPUPerRequestUS: 24.4, CPUUtil: 0.31, Cores: 16, MaxRSS: 412_000_000,
		},
		Indicators: []result.Indicator{
			{ID: "overloaded", Severity: "warn", Message: "Success rate is below 95% - system may be overloaded"},
			{ID: "server_errors", Severity: "warn", Message: "High server error rate (36.00%) - check application logs"},
			{ID: "rate_limited", Severity: "warn", Message: "10 requests were rate limited (429, 0.05%) - the target throttled this load, so the figures measure its rate limiter rather than its capacity"},
			{ID: "timeouts", Severity: "warn", Message: "2400 requests timed out (11.94%) - this many timeouts usually means requests queue behind a full connection or worker pool on the target"},
			{ID: "connection_errors", Severity: "warn", Message: "380 connection errors (refused 50, reset 60, port exhausted 130, fd limit 140) - refused suggests the server's listen backlog or connection pool is full (or it is down); reset suggests the server or a proxy drops connections under load (backlog, pool or keep-alive limits); port exhausted means the generator ran out of local ports (reuse connections or add source addresses); fd limit means the generator hit its open file limit (raise ulimit -n)"},
			{ID: "dropped", Severity: "warn", Message: "110 arrivals were dropped (0.55% of offered load) because max_in_flight was reached - the offered load was not delivered, so the target was tested at less than the planned rate"},
		},
	},
		stepSpec{scenario: "voter", name: "POST vote", group: "writes", ok: 9326, okLat: dist{697, 29 * s, 6}, fails: fails},
		stepSpec{scenario: "observer", name: "POST vote", group: "writes", ok: 12, okLat: dist{40 * ms, 25 * s, 1}},
		stepSpec{scenario: "observer", name: "GET /elections/{{ vars.election }}/results", group: "reads", ok: 0,
			fails: []failure{{class: sample.ServerError, n: 4, lat: dist{5 * ms, 6 * ms, 1}}}},
	)
}

// openDropped is an open run that could not deliver its rate: arrivals
// were dropped and the generator ran late.
func openDropped(t *testing.T) *result.Result {
	return build(t, result.Result{
		Plan: result.PlanInfo{Name: "spike", File: "spike.yaml", Target: "demo"},
		Run: result.RunInfo{DurationS: 90.2, Model: "open", LatencyFrom: "intended", PeakRate: 200, Segment: result.Segment{Index: 1, Count: 4},
			StopReason: "data source voters ran out of rows (pick: unique)"},
		Generator: result.Generator{
			Lag: lagOf(t, dist{50, 12 * ms, 8}, 18000), CPUSeconds: 80, CPUPerRequestUS: 4400, CPUUtil: 0.93, Cores: 1, MaxRSS: 1_250_000_000,
		},
		Indicators: []result.Indicator{
			{ID: "overloaded", Severity: "warn", Message: "Success rate is below 95% - system may be overloaded"},
			{ID: "dropped", Severity: "warn", Message: "1500 arrivals were dropped (8.33% of offered load) because max_in_flight was reached - the offered load was not delivered, so the target was tested at less than the planned rate"},
			{ID: "generator_lag", Severity: "warn", Message: "Generator lag p99 is 11.079ms (over 1ms) - the generator could not start work on time, so latency and throughput figures from this run are suspect"},
			{ID: "generator_cpu", Severity: "warn", Message: "Generator CPU was at 93.00% of 1 core - the generator was CPU bound, so the target may have had more to give; use more cores or split the run into segments"},
		},
	},
		stepSpec{scenario: "burst", name: "GET /", ok: 16500, okLat: dist{1 * ms, 1500 * ms, 4},
			fails: []failure{{class: sample.Dropped, n: 1500}}},
	)
}

// partialThresholds was interrupted and carries passing, failing and
// un-evaluable thresholds.

// The indicators and thresholds in these results are written out by hand
// (as gate produces them for these runs) so that report's tests do not
// depend on package gate.
func partialThresholds(t *testing.T) *result.Result {
	return build(t, result.Result{
		Plan: result.PlanInfo{Name: "soak", Target: "http://10.0.0.5"},
		Run: result.RunInfo{DurationS: 74.4, Model: "closed", Paced: true, LatencyFrom: "intended", MaxUsers: 400,
			Partial: true, PartialReason: "interrupted by SIGINT at 1m14s of 5m"},
		Thresholds: []result.Threshold{
			{Expr: "p95 < 5s", Value: "3.867s", Pass: true},
			{Expr: "error_rate < 1%", Value: "2.00%", Pass: false},
			{Expr: "GET item: p99 < 2s", Value: "4.755s", Pass: false},
			{Expr: "GET itme: p99 < 2s", Error: `unknown step "GET itme"; did you mean "GET item"?`},
		},
		Indicators: []result.Indicator{{ID: "partial", Severity: "warn", Message: "Partial result (interrupted by SIGINT at 1m14s of 5m) - figures cover only part of the planned run"}},
	},
		stepSpec{scenario: "shopper", name: "GET item", ok: 2940, okLat: dist{2 * ms, 5 * s, 5},
			fails: []failure{{class: sample.ClientError, n: 60, lat: dist{1 * ms, 3 * ms, 1}}}},
	)
}

func TestTextGolden(t *testing.T) {
	cases := []struct {
		name string
		res  func(*testing.T) *result.Result
	}{
		{"healthy_closed", healthyClosed},
		{"overloaded_every_class", overloaded},
		{"open_dropped_lag", openDropped},
		{"partial_thresholds", partialThresholds},
		{"sweep_levels", func(t *testing.T) *result.Result { return sweep(t, 1, 200) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Text(&b, c.res(t)); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("Text output differs from %s (run with -update if the change is intended)\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

// The stored figures are a convenience; a file whose figures disagree with
// its histograms must still report what the histograms say.
func TestTextRecomputesFromHistograms(t *testing.T) {
	honest := healthyClosed(t)
	var want bytes.Buffer
	if err := Text(&want, honest); err != nil {
		t.Fatal(err)
	}
	lying := healthyClosed(t)
	for _, l := range []*result.Latency{&lying.Totals.LatencyOK, &lying.Totals.LatencyAll, &lying.Steps[0].LatencyOK, &lying.Generator.Lag} {
		l.MinUS, l.P50US, l.P95US, l.P99US, l.P999US, l.MaxUS, l.AvgUS = 1, 2, 3, 4, 5, 6, 7
	}
	var got bytes.Buffer
	if err := Text(&got, lying); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("output used stored figures instead of histograms:\n%s", got.String())
	}
}

func TestTextBadHistogram(t *testing.T) {
	r := healthyClosed(t)
	r.Steps[1].LatencyOK.HDR = "not base64 at all"
	err := Text(&bytes.Buffer{}, r)
	if err == nil || !strings.Contains(err.Error(), `step "GET results" latency_ok: bad hdr histogram`) {
		t.Fatalf("got error %v, want one naming the step and the bad histogram", err)
	}
}

// A run that never sent a request still gets a readable summary.
func TestTextEmptyRun(t *testing.T) {
	r := build(t, result.Result{Run: result.RunInfo{Model: "open", PeakRate: 10}})
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Model: open, up to 10/s — latencies from intended start (no coordinated omission)\n\nDuration:           0s\n",
		"Successful:         0 (0.00%)\n",
		"Throughput:         0.00 req/s\n",
		"Latency Statistics (successful requests only):\n  (no successful requests)\n",
		"Latency Statistics (all requests):\n  (no requests)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "Request Type Breakdown") || strings.Contains(b.String(), "Generator:") {
		t.Errorf("empty sections should be left out:\n%s", b.String())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := overloaded(t)
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	back, err := result.Decode(b.Bytes())
	if err != nil {
		t.Fatalf("JSON output does not decode as a result: %v", err)
	}
	var again bytes.Buffer
	if err := JSON(&again, back); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Error("JSON output changed after a decode/encode round trip")
	}
	if !strings.HasPrefix(b.String(), "{\n \"schema\": \"stampede.result/v1\",") {
		t.Errorf("want indented JSON starting with the schema, got %.60q", b.String())
	}
}
