package gate

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

func TestParseGood(t *testing.T) {
	cases := []struct {
		expr string
		want Threshold
	}{
		// the plan's example forms
		{"p95 < 500ms", Threshold{Metric: "p95", Op: "<", Value: 500_000, Kind: Duration}},
		{"error_rate < 1%", Threshold{Metric: "error_rate", Op: "<", Value: 0.01, Kind: Rate}},
		{"POST vote: p99 < 2s", Threshold{Step: "POST vote", Metric: "p99", Op: "<", Value: 2_000_000, Kind: Duration}},
		// spaces around the operator are optional
		{"p99.9<=1.5s", Threshold{Metric: "p99.9", Op: "<=", Value: 1_500_000, Kind: Duration}},
		// the step is everything before the last ": ", so names may hold ": "
		{"GET /a: b: p95 >= 1m", Threshold{Step: "GET /a: b", Metric: "p95", Op: ">=", Value: 60_000_000, Kind: Duration}},
		{"voter/POST vote: max == 250us", Threshold{Step: "voter/POST vote", Metric: "max", Op: "==", Value: 250, Kind: Duration}},
		// both spellings of micro
		{"p95_all > 250µs", Threshold{Metric: "p95_all", Op: ">", Value: 250, Kind: Duration}},
		{"min_all > 0s", Threshold{Metric: "min_all", Op: ">", Value: 0, Kind: Duration}},
		{"avg < 100ms", Threshold{Metric: "avg", Op: "<", Value: 100_000, Kind: Duration}},
		// any percentile the histogram can answer
		{"p99.99 < 3s", Threshold{Metric: "p99.99", Op: "<", Value: 3_000_000, Kind: Duration}},
		{"error_rate <= 0.5%", Threshold{Metric: "error_rate", Op: "<=", Value: 0.005, Kind: Rate}},
		// a bare 0 is 0 in any unit
		{"error_rate == 0", Threshold{Metric: "error_rate", Op: "==", Value: 0, Kind: Rate}},
		{"timeout_rate == 0%", Threshold{Metric: "timeout_rate", Op: "==", Value: 0, Kind: Rate}},
		{"rate_limited_rate < 2%", Threshold{Metric: "rate_limited_rate", Op: "<", Value: 0.02, Kind: Rate}},
		// class counts and run counts
		{"timeout < 10", Threshold{Metric: "timeout", Op: "<", Value: 10, Kind: Count}},
		{"conn_refused == 0", Threshold{Metric: "conn_refused", Op: "==", Value: 0, Kind: Count}},
		{"requests >= 1000", Threshold{Metric: "requests", Op: ">=", Value: 1000, Kind: Count}},
		{"iterations > 0", Threshold{Metric: "iterations", Op: ">", Value: 0, Kind: Count}},
		// throughput with or without the unit
		{"rps >= 100/s", Threshold{Metric: "rps", Op: ">=", Value: 100, Kind: Throughput}},
		{"rps > 50.5", Threshold{Metric: "rps", Op: ">", Value: 50.5, Kind: Throughput}},
	}
	for _, c := range cases {
		got, err := Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		c.want.Expr = c.expr
		if got != c.want {
			t.Errorf("Parse(%q) = %+v, want %+v", c.expr, got, c.want)
		}
	}
}

func TestParseBad(t *testing.T) {
	cases := []struct {
		expr, want string
	}{
		// the brief's example
		{"p95 < 5xx", `threshold "p95 < 5xx": bad value "5xx": expected a duration such as 500ms`},
		// a latency needs a unit: 500 what?
		{"p95 < 500", `threshold "p95 < 500": bad value "500": expected a duration such as 500ms`},
		{"p95 < 5%", `threshold "p95 < 5%": bad value "5%": expected a duration such as 500ms`},
		{"p95 < -5ms", `threshold "p95 < -5ms": bad value "-5ms": expected a duration such as 500ms`},
		// typos get a hint
		{"eror_rate < 1%", `threshold "eror_rate < 1%": unknown metric "eror_rate"; did you mean "error_rate"?`},
		{"timeouts < 10", `threshold "timeouts < 10": unknown metric "timeouts"; did you mean "timeout"?`},
		{"P95 < 1s", `threshold "P95 < 1s": unknown metric "P95"; did you mean "p95"?`},
		// nothing close: list what exists
		{"latency < 1s", `threshold "latency < 1s": unknown metric "latency": expected a latency (p50 p75 p90 p95 p99 p99.9 min max avg, or with _all), a rate (error_rate success_rate CLASS_rate), a count (requests failed successful iterations CLASS) or rps`},
		// a rate compared with a duration, or an ambiguous plain number
		{"error_rate < 5s", `threshold "error_rate < 5s": bad value "5s": error_rate is a rate; expected a percentage such as 1% (a bare number is refused: 1 could mean 1% or 100%)`},
		{"error_rate < 5", `threshold "error_rate < 5": bad value "5": error_rate is a rate; expected a percentage such as 1% (a bare number is refused: 1 could mean 1% or 100%)`},
		// a bare 1 once passed a run with 49.99% errors as a fraction (100%)
		{"error_rate < 1", `threshold "error_rate < 1": bad value "1": error_rate is a rate; expected a percentage such as 1% (a bare number is refused: 1 could mean 1% or 100%)`},
		{"success_rate >= 0.99", `threshold "success_rate >= 0.99": bad value "0.99": success_rate is a rate; expected a percentage such as 1% (a bare number is refused: 1 could mean 1% or 100%)`},
		{"error_rate < 150%", `threshold "error_rate < 150%": bad value "150%": expected a percentage from 0% to 100%, such as 1%`},
		// a count compared with a percentage points at the rate metric
		{"timeout < 1%", `threshold "timeout < 1%": bad value "1%": timeout is a count; expected a number such as 10 (use timeout_rate for a percentage)`},
		{"failed < 1%", `threshold "failed < 1%": bad value "1%": failed is a count; expected a number such as 10 (use error_rate for a percentage)`},
		{"requests > 1s", `threshold "requests > 1s": bad value "1s": requests is a count; expected a number such as 10`},
		{"rps > 1s", `threshold "rps > 1s": bad value "1s": expected a rate such as 100/s`},
		// operators
		{"p95 = 1s", `threshold "p95 = 1s": bad operator "=": expected one of < <= > >= ==`},
		{"p95 => 1s", `threshold "p95 => 1s": bad operator "=>": expected one of < <= > >= ==`},
		{"p95 != 1s", `threshold "p95 != 1s": bad operator "!=": expected one of < <= > >= ==`},
		{"p95 << 1s", `threshold "p95 << 1s": bad operator "<<": expected one of < <= > >= ==`},
		{"p95 1s", `threshold "p95 1s": expected a comparison: METRIC OP VALUE with OP one of < <= > >= ==, such as p95 < 500ms`},
		{"", `threshold "": expected a comparison: METRIC OP VALUE with OP one of < <= > >= ==, such as p95 < 500ms`},
		// missing parts
		{"p95 <", `threshold "p95 <": expected a value after "<"`},
		{"< 1s", `threshold "< 1s": expected a metric before "<", such as p95`},
		{": p95 < 1s", `threshold ": p95 < 1s": expected a step name before ":"`},
	}
	for _, c := range cases {
		_, err := Parse(c.expr)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error %s", c.expr, c.want)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("Parse(%q) error\n got %s\nwant %s", c.expr, err, c.want)
		}
	}
}

// evalResult has a step whose name holds ": ", a step name shared by two
// scenarios, and a step that never succeeded.
func evalResult(t *testing.T) *result.Result {
	return build(t, result.RunInfo{DurationS: 20, Model: "closed"},
		stepSpec{scenario: "s1", name: "GET /a: b", okUS: spread(1000, 1000, 100_000),
			fails: map[sample.Class]int64{sample.ServerError: 20, sample.Timeout: 10}, failUS: 30_000_000},
		stepSpec{scenario: "voter", name: "POST vote", okUS: spread(500, 10_000, 50_000),
			fails: map[sample.Class]int64{sample.RateLimited: 5}, failUS: 2000},
		stepSpec{scenario: "admin", name: "POST vote", okUS: spread(100, 200_000, 200_000)},
		stepSpec{scenario: "s1", name: "GET /down", fails: map[sample.Class]int64{sample.ServerError: 5}, failUS: 3000},
	)
}

func TestEvaluate(t *testing.T) {
	r := evalResult(t)
	cases := []struct {
		expr  string
		value string
		pass  bool
		err   string
	}{
		// latency over totals' successful requests; figures are the HDR
		// histogram's (highest equivalent value at 3 significant digits)
		{"p50 < 100ms", "41.343ms", true, ""},
		{"max < 100ms", "200.063ms", false, ""},
		{"avg <= 60ms", "53.438ms", true, ""},
		// the all-requests histogram includes the 30s timeouts
		{"max_all < 1s", "30.015s", false, ""},
		{"p95_all < 1s", "200.063ms", true, ""},
		// per step, with ": " inside the step name
		{"GET /a: b: p99 < 50ms", "99.071ms", false, ""},
		{"GET /a: b: p99.9 <= 100ms", "99.903ms", true, ""},
		// a bare name shared by two scenarios covers both ...
		{"POST vote: requests == 605", "605", true, ""},
		{"POST vote: max >= 200ms", "200.063ms", true, ""},
		// ... and scenario/name picks one
		{"voter/POST vote: requests == 605", "505", false, ""},
		{"voter/POST vote: max < 100ms", "50.015ms", true, ""},
		{"POST vote: rate_limited == 5", "5", true, ""},
		// rates over totals: 40 failed of 1640
		{"error_rate < 1%", "2.44%", false, ""},
		{"error_rate <= 2.5%", "2.44%", true, ""},
		{"success_rate > 97%", "97.56%", true, ""},
		{"server_error_rate < 1.5%", "1.52%", false, ""},
		{"GET /down: error_rate == 100%", "100.00%", true, ""},
		// counts
		{"timeout < 10", "10", false, ""},
		{"timeout <= 10", "10", true, ""},
		{"failed == 40", "40", true, ""},
		{"iterations > 0", "820", true, ""},
		// throughput: 1640 requests over 20s
		{"rps >= 80/s", "82.00/s", true, ""},
		{"GET /a: b: rps > 60", "51.50/s", false, ""},
		// un-evaluable thresholds fail with the reason
		{"GET /down: p95 < 1s", "", false, `no successful requests in step "GET /down" to measure p95 over`},
		{"GET /down: p95_all < 1s", "3.001ms", true, ""},
		{"POST vot: p95 < 1s", "", false, `unknown step "POST vot"; did you mean "POST vote"?`},
		{"checkout: p95 < 1s", "", false, `unknown step "checkout": the run has no step of that name`},
		{"POST vote: iterations > 0", "", false, "iterations is measured only over the whole run, not per step"},
		{"p95 < 5xx", "", false, `bad value "5xx": expected a duration such as 500ms`},
	}
	var exprs []string
	for _, c := range cases {
		exprs = append(exprs, c.expr)
	}
	got := Evaluate(r, exprs)
	if len(got) != len(cases) {
		t.Fatalf("Evaluate returned %d thresholds for %d expressions", len(got), len(cases))
	}
	for i, c := range cases {
		want := result.Threshold{Expr: c.expr, Value: c.value, Pass: c.pass, Error: c.err}
		if got[i] != want {
			t.Errorf("Evaluate(%q)\n got %+v\nwant %+v", c.expr, got[i], want)
		}
	}
}

// With nothing measured, rates and rps are undefined rather than 0%: a
// run that sent nothing must not pass "error_rate < 1%".
func TestEvaluateEmptyRun(t *testing.T) {
	r := build(t, result.RunInfo{Model: "open"})
	got := Evaluate(r, []string{"error_rate < 1%", "requests == 0", "rps > 0", "p95 < 1s"})
	want := []result.Threshold{
		{Expr: "error_rate < 1%", Error: "no requests in the run, so error_rate is undefined"},
		{Expr: "requests == 0", Value: "0", Pass: true},
		{Expr: "rps > 0", Error: "the run has no measured duration, so rps is undefined"},
		{Expr: "p95 < 1s", Error: "no successful requests in the run to measure p95 over"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %+v\nwant %+v", got[i], want[i])
		}
	}
	if AllPass(got) {
		t.Error("AllPass is true although thresholds could not be evaluated")
	}
}

// A corrupt histogram is reported, not read as zero latency.
func TestEvaluateBadHistogram(t *testing.T) {
	r := evalResult(t)
	r.Totals.LatencyOK.HDR = "garbage"
	got := Evaluate(r, []string{"p95 < 1s"})
	if got[0].Pass || !strings.HasPrefix(got[0].Error, "bad hdr histogram") {
		t.Errorf("got %+v, want a failure naming the bad histogram", got[0])
	}
}

func TestAllPass(t *testing.T) {
	cases := []struct {
		name string
		ts   []result.Threshold
		want bool
	}{
		{"no thresholds pass", nil, true},
		{"all pass", []result.Threshold{{Pass: true}, {Pass: true}}, true},
		{"one fails", []result.Threshold{{Pass: true}, {Pass: false}}, false},
		{"an error fails even if marked pass", []result.Threshold{{Pass: true, Error: "x"}}, false},
	}
	for _, c := range cases {
		if got := AllPass(c.ts); got != c.want {
			t.Errorf("%s: AllPass = %v, want %v", c.name, got, c.want)
		}
	}
}

// formatDuration must agree with report.Duration; these are the same
// cases as report's table.
func TestFormatDuration(t *testing.T) {
	cases := map[int64]string{
		3265: "3.265ms", 818663: "818.663ms", 60000: "60ms", 697: "697µs",
		4718320: "4.718s", 1655765: "1.656s", 74000000: "1m14s", 0: "0s",
	}
	for us, want := range cases {
		if got := formatDuration(us); got != want {
			t.Errorf("formatDuration(%d) = %q, want %q", us, got, want)
		}
	}
}
