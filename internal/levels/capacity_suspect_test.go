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

const suspectLag = "generator lag p99 40ms against a p95 of 134.399ms"

// kneeLevel is a complete level at rate, judged by "p95 < 150ms", that
// served achieved iterations/s with the p95 given.
func kneeLevel(rate, achieved float64, p95 time.Duration, suspect string) result.Level {
	r := &result.Result{}
	r.Run.DurationS = 3
	r.Totals.Requests = int64(achieved * 3)
	r.Totals.Successful, r.Totals.Iterations = r.Totals.Requests, r.Totals.Requests
	r.Totals.LatencyOK.Count, r.Totals.LatencyOK.P95US = r.Totals.Requests, p95.Microseconds()
	pass := p95 < 150*time.Millisecond
	return result.Level{Vary: plan.VaryRate, Value: rate, Pass: pass, Suspect: suspect, Result: r,
		SLO: []result.Threshold{{Expr: "p95 < 150ms", Value: result.FormatDuration(p95.Microseconds()), Pass: pass}}}
}

// The levels of the reported search (issue D3), in the order they ran:
// 20/s and 40/s suspect (the generator lagged; 40/s's p95 of 134ms is the
// generator's), the judged levels from 80/s on flat at 22-25ms up to 95/s.
func d3Levels() []result.Level {
	return []result.Level{
		kneeLevel(20, 20, 21087*time.Microsecond, suspectLag),
		kneeLevel(40, 40, 134399*time.Microsecond, suspectLag),
		kneeLevel(80, 80, 22*time.Millisecond, ""),
		kneeLevel(160, 100, 400*time.Millisecond, ""),
		kneeLevel(120, 100, 300*time.Millisecond, ""),
		kneeLevel(100, 99, 200*time.Millisecond, ""),
		kneeLevel(90, 90, 23*time.Millisecond, ""),
		kneeLevel(95, 95, 25*time.Millisecond, ""),
	}
}

// D3: the knee was put at 40/s, a level the search itself marked suspect,
// measured from 20/s, suspect too. A suspect level is neither the knee,
// the level before it, nor the base a rise is measured from.
func TestFindKneeSkipsSuspectLevels(t *testing.T) {
	k, found := FindKnee(d3Levels())
	if !found || k.AtRate != 100 || k.FollowedUpTo != 95 || k.P95BeforeUS != 25000 {
		t.Fatalf("knee %+v (found %v): want at 100/s after 95/s, the suspect 20/s and 40/s left out", k, found)
	}
	// Every level suspect: no knee to draw.
	all := d3Levels()[:2]
	if k, found := FindKnee(all); found || k.FollowedUpTo != 0 {
		t.Errorf("only suspect levels: knee %+v (found %v), want none", k, found)
	}
}

// d3Runner replays d3Levels for the search, by rate.
func d3Runner(t *testing.T) func(context.Context, string, float64, int, int, Options) (result.Level, error) {
	byRate := map[float64]result.Level{}
	for _, l := range d3Levels() {
		byRate[l.Value] = l
	}
	return func(_ context.Context, _ string, v float64, _, _ int, _ Options) (result.Level, error) {
		l, ok := byRate[v]
		if !ok {
			t.Fatalf("the search tried %g/s, which the test did not plan", v)
		}
		return l, nil
	}
}

// The search of D3, end to end on made-up levels: the answer and the knee
// come from judged levels, and the table shows the suspect levels as
// SUSPECT, not PASS (it said PASS, and the knee line "up to 20/s ... at
// 40/s").
func TestCapacityKneeAndTableLeaveSuspectLevelsOut(t *testing.T) {
	p := mustPlan(t, getPlan("http://127.0.0.1:9", "/", "", "    - {duration: 1s, rate: 10/s}"))
	c, err := SearchCapacity(context.Background(), p, CapacityOptions{Start: 20, Max: 1000, Budget: time.Hour,
		Options: Options{Hold: time.Second, Runner: d3Runner(t), SLO: []string{"p95 < 150ms"}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate != 95 || c.FailedAt != 100 || c.Undetermined != "" {
		t.Fatalf("capacity %g, failed at %g, undetermined %q: want 95/s, 100/s, determined", c.Rate, c.FailedAt, c.Undetermined)
	}
	if !c.KneeFound || c.Knee.AtRate != 100 || c.Knee.FollowedUpTo != 95 {
		t.Errorf("knee %+v (found %v): want at 100/s after 95/s", c.Knee, c.KneeFound)
	}
	var out bytes.Buffer
	if err := WriteCapacity(&out, c, []string{"p95 < 150ms"}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "20/s ") || strings.HasPrefix(line, "40/s ") {
			if !strings.HasSuffix(strings.TrimSpace(line), "  SUSPECT") {
				t.Errorf("suspect level's row %q: want SUSPECT\n%s", line, text)
			}
		}
	}
	if !strings.Contains(text, "Knee: throughput followed the offered rate up to 95/s (p95 25ms); at 100/s: ") {
		t.Errorf("knee line:\n%s", text)
	}
	// The result keeps each level's pass on its criteria beside why it is
	// suspect (the search and the exit code read pass).
	for _, l := range c.Result.Levels {
		if l.Value == 20 && (!l.Pass || l.Suspect == "") {
			t.Errorf("20/s in the result: pass %v, suspect %q", l.Pass, l.Suspect)
		}
	}
}

// A knee above levels that were all suspect is not "already at the lowest
// rate": lower rates ran, and the line names them.
func TestKneeAboveOnlySuspectLevels(t *testing.T) {
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
	if want := "Knee: at the lowest rate judged (10/s, 20/s below it suspect); at 20.625/s: achieved 10.3 of 20.625 offered iterations/s"; !strings.Contains(out.String(), want) {
		t.Errorf("knee line, want %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "  PASS") {
		t.Errorf("a suspect level reads PASS:\n%s", out.String())
	}
}

// With no knee among the judged levels, the line says which levels above
// them were left out as suspect, or that none was judged.
func TestKneeLineNamesSuspectLevelsLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []result.Level
		want   string
	}{
		{"suspect above", []result.Level{
			kneeLevel(80, 80, 22*time.Millisecond, ""),
			kneeLevel(160, 60, 400*time.Millisecond, suspectLag),
		}, "Knee: not reached - throughput followed the offered rate up to 80/s; 160/s above it suspect, not judged\n"},
		{"all suspect", d3Levels()[:2], "Knee: not judged - every level that ran in full was suspect\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Capacity{Result: &result.Result{Levels: tc.levels}}
			c.Knee, c.KneeFound = FindKnee(tc.levels)
			var out bytes.Buffer
			if err := WriteCapacity(&out, c, []string{"p95 < 150ms"}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("want %q:\n%s", tc.want, out.String())
			}
		})
	}
}
