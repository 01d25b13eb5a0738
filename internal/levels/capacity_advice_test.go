package levels

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// suspectRunner stands in for the levels' processes: every rate up to
// passUpTo passes, suspect (the generator lagged), the next ones fail
// with half the offered iterations served.
func suspectRunner(passUpTo float64) func(context.Context, string, float64, int, int, Options) (result.Level, error) {
	return func(_ context.Context, vary string, v float64, _, _ int, _ Options) (result.Level, error) {
		served := int64(v * 10)
		if v > passUpTo {
			served /= 2
		}
		r := &result.Result{}
		r.Run.DurationS = 10
		r.Totals.Requests, r.Totals.Successful, r.Totals.Iterations = served, served, served
		lv := result.Level{Vary: vary, Value: v, Result: r, Pass: v <= passUpTo}
		if lv.Pass {
			lv.Suspect = "the generator lagged"
		}
		return lv, nil
	}
}

// An undetermined capacity advises --workers only for a plan --workers
// can split: a demo target, setup or pick: unique data is refused with
// --workers, so the advice there is a bigger generator, and says why.
func TestUndeterminedCapacityAdvisesWorkersOnlyWhenSplittable(t *testing.T) {
	cases := []struct {
		name, target, extra string
		split               bool
	}{
		{"plain", "http://127.0.0.1:9", "", true},
		{"demo", "demo", "", false},
		{"setup", "http://127.0.0.1:9", "setup:\n  - name: login\n    get: /login", false},
		{"unique", "http://127.0.0.1:9", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlan(t, getPlan(tc.target, "/", tc.extra, "    - {duration: 1s, users: 1}"))
			if tc.name == "unique" {
				// What a plan with data: {file: ids.csv, pick: unique} holds.
				p.Data = append(p.Data, &plan.DataSource{Name: "ids", Pick: plan.PickUnique})
			}
			c, err := SearchCapacity(context.Background(), p, CapacityOptions{Start: 10, Max: 40, Budget: time.Hour,
				Options: Options{Hold: time.Second, Runner: suspectRunner(20), SLO: []string{"error_rate < 1%"}}})
			if err != nil {
				t.Fatal(err)
			}
			if c.Undetermined == "" || c.Rate != 20 {
				t.Fatalf("capacity %g, undetermined %q: want 20/s, undetermined", c.Rate, c.Undetermined)
			}
			var out bytes.Buffer
			if err := WriteCapacity(&out, c, []string{"error_rate < 1%"}); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			if got := strings.Contains(text, "split the load with --workers"); got != tc.split {
				t.Errorf("advises --workers: %v, want %v:\n%s", got, tc.split, text)
			}
			if !tc.split && !strings.Contains(text, "bigger generator; the load cannot be split: "+SplitRefusal(p)) {
				t.Errorf("the advice does not say why the load cannot be split:\n%s", text)
			}
		})
	}
}

// The knee line reads "at R/s: achieved ...", not "at R/s it achieved".
func TestKneeLineReads(t *testing.T) {
	p := mustPlan(t, getPlan("http://127.0.0.1:9", "/", "", "    - {duration: 1s, users: 1}"))
	c, err := SearchCapacity(context.Background(), p, CapacityOptions{Start: 10, Max: 40, Budget: time.Hour,
		Options: Options{Hold: time.Second, Runner: suspectRunner(20), SLO: []string{"error_rate < 1%"}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteCapacity(&out, c, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "; at 20.625/s: achieved 10.3 of 20.625 offered iterations/s") {
		t.Errorf("knee line:\n%s", out.String())
	}
}

// A search whose every level fails stops once a level's hold would offer
// too few requests to judge, and says so. Before, it halved the rate on
// toward zero (down to 0.0000006/s, 24 levels each held in full) until the
// budget ran out.
func TestCapacityEveryLevelFailsStopsAtAJudgeableRate(t *testing.T) {
	p := mustPlan(t, getPlan("http://127.0.0.1:9", "/", "", "    - {duration: 1s, users: 1}"))
	tried := 0
	failAll := func(_ context.Context, vary string, v float64, _, _ int, _ Options) (result.Level, error) {
		tried++
		r := &result.Result{}
		r.Run.DurationS = 10
		return result.Level{Vary: vary, Value: v, Result: r}, nil
	}
	c, err := SearchCapacity(context.Background(), p, CapacityOptions{Start: 10, Max: 40, Budget: time.Hour,
		Options: Options{Hold: 10 * time.Second, Runner: failAll, SLO: []string{"error_rate < 1%"}}})
	if err != nil {
		t.Fatal(err)
	}
	// 10/s fails, then 5/s and 2.5/s and 1.25/s (12.5 requests in 10 s);
	// 0.625/s would send 6.
	if tried != 4 || c.Rate != 0 || c.FailedAt != 1.25 {
		t.Fatalf("%d levels, rate %g, failed at %g: want 4 levels, none passing, the lowest failing 1.25/s", tried, c.Rate, c.FailedAt)
	}
	if !strings.Contains(c.Stopped, "no rate met the SLOs, down to 1.25/s") {
		t.Errorf("stopped: %q", c.Stopped)
	}
}
