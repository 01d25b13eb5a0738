package merge

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// req is one recorded request.
type req struct {
	step  int
	class sample.Class
	us    int64
}

var stepNames = []struct{ scenario, name, group string }{
	{"voter", "GET parties", "reads"},
	{"voter", "POST vote", "writes"},
	{"watcher", "GET count", "reads"},
}

// resultOf records reqs the way the engine does: every step's histograms
// and the totals' get each request, and counts agree with them.
func resultOf(t *testing.T, reqs []req, mod func(*result.Result)) *result.Result {
	t.Helper()
	r := &result.Result{
		Schema: result.Schema,
		Plan:   result.PlanInfo{Name: "p", SHA256: "aaaa"},
		Run: result.RunInfo{Model: "closed", LatencyFrom: "send", Segment: result.Segment{Count: 1},
			Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationS: 10},
		Totals: result.Totals{ByClass: map[string]int64{}},
	}
	totOK, totAll := result.NewHistogram(), result.NewHistogram()
	type hs struct{ ok, all *hdr.Histogram }
	steps := make([]hs, len(stepNames))
	for i, sn := range stepNames {
		steps[i] = hs{result.NewHistogram(), result.NewHistogram()}
		r.Steps = append(r.Steps, result.Step{Scenario: sn.scenario, Name: sn.name, Group: sn.group, ByClass: map[string]int64{}})
	}
	for _, q := range reqs {
		s := &r.Steps[q.step]
		s.Requests++
		r.Totals.Requests++
		if q.class == sample.OK {
			s.Successful++
			r.Totals.Successful++
			mustRecord(t, q.us, steps[q.step].ok, totOK)
		} else {
			s.Failed++
			r.Totals.Failed++
			s.ByClass[q.class.String()]++
			r.Totals.ByClass[q.class.String()]++
		}
		if q.class != sample.Dropped {
			mustRecord(t, q.us, steps[q.step].all, totAll)
		}
	}
	for i := range r.Steps {
		r.Steps[i].LatencyOK = result.LatencyOf(steps[i].ok)
		r.Steps[i].LatencyAll = result.LatencyOf(steps[i].all)
	}
	r.Totals.LatencyOK, r.Totals.LatencyAll = result.LatencyOf(totOK), result.LatencyOf(totAll)
	if mod != nil {
		mod(r)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("test result inconsistent: %v", err)
	}
	return r
}

func mustRecord(t *testing.T, us int64, hs ...*hdr.Histogram) {
	t.Helper()
	for _, h := range hs {
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
}

// randomRequests draws latencies from a log-normal-ish spread over six
// decades, so every histogram bucket size is exercised, and failures of
// several classes.
func randomRequests(rng *rand.Rand, n int) []req {
	classes := []sample.Class{sample.OK, sample.OK, sample.OK, sample.OK, sample.ServerError, sample.Timeout, sample.Dropped, sample.ConnReset}
	out := make([]req, n)
	for i := range out {
		us := int64(1 + rng.ExpFloat64()*float64(int64(1)<<rng.IntN(30)))
		out[i] = req{step: rng.IntN(len(stepNames)), class: classes[rng.IntN(len(classes))], us: min(us, result.HistHighUS)}
	}
	return out
}

func histOf(t *testing.T, l result.Latency) *hdr.Histogram {
	t.Helper()
	h, err := l.Histogram()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sameHist(t *testing.T, what string, got, want result.Latency) {
	t.Helper()
	g, w := histOf(t, got), histOf(t, want)
	if g.TotalCount() != w.TotalCount() {
		t.Fatalf("%s: merged count %d, want %d", what, g.TotalCount(), w.TotalCount())
	}
	// Comparing every bucket, not just a few percentiles, is what "exact"
	// means: any percentile of the two is then the same.
	gd, wd := g.Distribution(), w.Distribution()
	if len(gd) != len(wd) {
		t.Fatalf("%s: %d buckets, want %d", what, len(gd), len(wd))
	}
	for i := range gd {
		if gd[i] != wd[i] {
			t.Fatalf("%s: bucket %d is %+v, want %+v", what, i, gd[i], wd[i])
		}
	}
	if got.P50US != want.P50US || got.P99US != want.P99US || got.P999US != want.P999US || got.MaxUS != want.MaxUS || got.MinUS != want.MinUS {
		t.Fatalf("%s: figures %+v, want %+v", what, got, want)
	}
}

func TestMergeIsExact(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		rng := rand.New(rand.NewPCG(uint64(n), 42))
		all := randomRequests(rng, 20000)
		whole := resultOf(t, all, nil)
		// Random, uneven split: some inputs may hold few requests.
		parts := make([][]req, n)
		for _, q := range all {
			k := rng.IntN(n)
			parts[k] = append(parts[k], q)
		}
		var rs []*result.Result
		for _, p := range parts {
			rs = append(rs, resultOf(t, p, nil))
		}
		m, err := Results(rs)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		sameHist(t, "totals ok", m.Totals.LatencyOK, whole.Totals.LatencyOK)
		sameHist(t, "totals all", m.Totals.LatencyAll, whole.Totals.LatencyAll)
		if m.Totals.Requests != whole.Totals.Requests || m.Totals.Failed != whole.Totals.Failed {
			t.Errorf("n=%d: totals %d/%d, want %d/%d", n, m.Totals.Requests, m.Totals.Failed, whole.Totals.Requests, whole.Totals.Failed)
		}
		for c, want := range whole.Totals.ByClass {
			if m.Totals.ByClass[c] != want {
				t.Errorf("n=%d: class %s = %d, want %d", n, c, m.Totals.ByClass[c], want)
			}
		}
		if len(m.Steps) != len(whole.Steps) {
			t.Fatalf("n=%d: %d steps, want %d", n, len(m.Steps), len(whole.Steps))
		}
		for i, s := range m.Steps {
			w := whole.Steps[i]
			if s.Name != w.Name || s.Requests != w.Requests || s.Successful != w.Successful {
				t.Errorf("n=%d: step %d = %s %d/%d, want %s %d/%d", n, i, s.Name, s.Requests, s.Successful, w.Name, w.Requests, w.Successful)
			}
			sameHist(t, "step "+s.Name+" ok", s.LatencyOK, w.LatencyOK)
			sameHist(t, "step "+s.Name+" all", s.LatencyAll, w.LatencyAll)
		}
		for _, r := range rs {
			if r.Totals.Requests == 0 {
				continue
			}
			if r.Totals.LatencyOK.HDR == m.Totals.LatencyOK.HDR && n > 1 {
				t.Errorf("n=%d: an input was modified in place", n)
			}
		}
	}
}

func TestMergePlanMismatch(t *testing.T) {
	a := resultOf(t, []req{{0, sample.OK, 100}}, nil)
	b := resultOf(t, []req{{0, sample.OK, 200}}, func(r *result.Result) { r.Plan.SHA256 = "bbbbbbbbbbbbbbbbbbbb" })
	_, err := Options{Names: []string{"a.json", "b.json"}}.Results([]*result.Result{a, b})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Index != 1 || !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("got %v, want a plan mismatch naming input 2", err)
	}
	for _, want := range []string{"b.json: plan differs", "bbbbbbbbbbbb", "a.json has aaaa", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	m, err := Options{Force: true}.Results([]*result.Result{a, b})
	if err != nil {
		t.Fatalf("--force: %v", err)
	}
	if m.Totals.Requests != 2 || m.Plan.SHA256 != "aaaa" {
		t.Errorf("forced merge: requests %d, plan %q", m.Totals.Requests, m.Plan.SHA256)
	}
}

// oneInterval is a series of one empty interval of the given length, every
// column filled as result.Check requires.
func oneInterval(intervalS float64) result.Series {
	z := []int64{0}
	return result.Series{IntervalS: intervalS, T: []float64{0}, Started: z, Completed: z, OK: z,
		P50US: z, P95US: z, P99US: z, Active: z, InFlight: z, Dropped: z, LagP99US: z, Target: []float64{0}}
}

func TestMergeRefuses(t *testing.T) {
	base := func(mod func(*result.Result)) *result.Result {
		return resultOf(t, []req{{1, sample.OK, 1000}}, mod)
	}
	seg := func(i, n int) func(*result.Result) {
		return func(r *result.Result) { r.Run.Segment = result.Segment{Index: i, Count: n} }
	}
	corrupt := base(nil)
	corrupt.Totals.Failed = 3
	cases := []struct {
		name string
		rs   []*result.Result
		want string
	}{
		{"nothing", nil, "nothing to merge"},
		{"open with closed", []*result.Result{base(nil), base(func(r *result.Result) { r.Run.Model = "open"; r.Run.LatencyFrom = "intended" })},
			`input 2: model "open", but input 1 is "closed"`},
		{"paced with unpaced", []*result.Result{base(nil), base(func(r *result.Result) { r.Run.LatencyFrom = "intended" })},
			`input 2: latencies count from "intended", but input 1's from "send"`},
		{"same segment twice", []*result.Result{base(seg(0, 2)), base(seg(1, 2)), base(seg(1, 2))},
			"input 3: segment 2 of 2 is also input 2"},
		{"segment with whole run", []*result.Result{base(seg(0, 2)), base(nil)},
			"input 2: segment whole run, but input 1 is segment 1 of 2"},
		{"different segment counts", []*result.Result{base(seg(0, 2)), base(seg(1, 3))},
			"input 2: segment 2 of 3"},
		{"corrupt input", []*result.Result{base(nil), corrupt},
			"input 2: totals: successful 1 + failed 3 != requests 1"},
		{"different intervals", []*result.Result{
			base(func(r *result.Result) { r.Series = oneInterval(1) }),
			base(func(r *result.Result) { r.Series = oneInterval(5) })},
			"input 2: series interval 5s, but input 1's is 1s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Results(c.rs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestMergeRunInfo(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(idx int, start time.Duration, dur float64, partial string) *result.Result {
		return resultOf(t, []req{{0, sample.OK, 500}}, func(r *result.Result) {
			r.Run.Segment = result.Segment{Index: idx, Count: 3}
			r.Run.Started = t0.Add(start)
			r.Run.Ended = r.Run.Started.Add(seconds(dur + 1))
			r.Run.DurationS = dur
			r.Run.MaxUsers = 10 + idx
			r.Run.Partial = partial != ""
			r.Run.PartialReason = partial
			r.Generator = result.Generator{CPUSeconds: 2, Cores: 2, MaxRSS: int64(idx+1) * 100, Lag: result.LatencyOf(result.NewHistogram())}
			r.Thresholds = []result.Threshold{{Expr: "p95 < 1s", Pass: true}}
			r.Indicators = []result.Indicator{{ID: "x"}}
		})
	}
	rs := []*result.Result{mk(2, 30*time.Millisecond, 10, ""), mk(0, 0, 10, "interrupted by SIGINT")}
	m, err := Options{Names: []string{"s3.json", "s1.json"}}.Results(rs)
	if err != nil {
		t.Fatal(err)
	}
	run := m.Run
	if !run.Started.Equal(t0) || run.MaxUsers != 22 || run.Segment != (result.Segment{Count: 1}) {
		t.Errorf("run %+v: want start at the earliest input, users summed, one whole segment", run)
	}
	if d := run.DurationS; d < 10.029 || d > 10.031 {
		t.Errorf("duration %v, want from the first start to the last measured end (10.03s)", d)
	}
	if !run.Partial || run.PartialReason != "s1.json: interrupted by SIGINT; merged 2 of 3 segments (missing 2)" {
		t.Errorf("partial %v %q: want it to name the input and the missing segment", run.Partial, run.PartialReason)
	}
	if m.Thresholds != nil || m.Indicators != nil {
		t.Errorf("inputs' thresholds/indicators kept: %v %v; each judged only its own share", m.Thresholds, m.Indicators)
	}
	g := m.Generator
	if g.CPUSeconds != 4 || g.Cores != 4 || g.MaxRSS != 300 || g.CPUPerRequestUS != 2e6 {
		t.Errorf("generator %+v", g)
	}
	if g.CPUUtil < 0.099 || g.CPUUtil > 0.101 {
		t.Errorf("cpu util %v, want 4 CPU s over 40 core-seconds", g.CPUUtil)
	}
}

// Two segments that started 2 s apart: their intervals land at their own
// wall-clock seconds, counts add where they overlap.
func TestMergeSeriesAlignsOnWallClock(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(start time.Duration, ok []int64, p95 []int64, failed []int64, lag []int64) *result.Result {
		return resultOf(t, nil, func(r *result.Result) {
			r.Run.Started = t0.Add(start)
			n := len(ok)
			ts := make([]float64, n)
			for i := range ts {
				ts[i] = float64(i)
			}
			r.Series = result.Series{IntervalS: 1, T: ts, OK: ok, Completed: ok, Started: ok, P50US: p95, P95US: p95, P99US: p95,
				Active: ok, InFlight: ok, Dropped: make([]int64, n), LagP99US: lag, Target: []float64{1, 1, 1},
				Failed: map[string][]int64{}}
			if failed != nil {
				r.Series.Failed["timeout"] = failed
			}
		})
	}
	a := mk(0, []int64{10, 10, 10}, []int64{100, 100, 100}, nil, []int64{5, 5, 5})
	b := mk(2*time.Second+100*time.Millisecond, []int64{30, 30, 0}, []int64{200, 200, 0}, []int64{1, 2, 3}, []int64{9, 1, 1})
	m, err := Results([]*result.Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	s := m.Series
	eq := func(name string, got []int64, want ...int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s = %v, want %v", name, got, want)
				return
			}
		}
	}
	if len(s.T) != 5 || s.T[4] != 4 {
		t.Fatalf("t = %v, want 0..4", s.T)
	}
	eq("ok", s.OK, 10, 10, 40, 30, 0)
	eq("timeout", s.Failed["timeout"], 0, 0, 1, 2, 3)
	// 10 at 100µs and 30 at 200µs: weighted by ok count.
	eq("p95", s.P95US, 100, 100, 175, 200, 0)
	eq("lag", s.LagP99US, 5, 5, 9, 1, 1)
	if s.Target[2] != 2 {
		t.Errorf("target %v: shares add up", s.Target)
	}
}

func TestMergeSamples(t *testing.T) {
	mk := func(n int64) *result.Result {
		return resultOf(t, nil, func(r *result.Result) {
			r.Samples = []result.ErrorSample{{Step: "s", Class: "other", Message: "boom", Count: n}, {Step: "s", Class: "other", Message: "only " + string(rune('a'+n)), Count: 1}}
		})
	}
	m, err := Results([]*result.Result{mk(2), mk(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Samples) != 3 || m.Samples[0].Message != "boom" || m.Samples[0].Count != 5 {
		t.Errorf("samples %+v: want equal messages summed, most frequent first", m.Samples)
	}
}

// Two unnamed steps of a scenario to the same URL share a name; a merge
// keeps them apart as one process reports them, and does not add the
// second into the first.
func TestMergeKeepsSameNamedStepsApart(t *testing.T) {
	rename := func(r *result.Result) { r.Steps[1].Name = r.Steps[0].Name }
	rng := rand.New(rand.NewPCG(5, 42))
	all := randomRequests(rng, 5000)
	whole := resultOf(t, all, rename)
	var rs []*result.Result
	for i := range 3 {
		var part []req
		for j, q := range all {
			if j%3 == i {
				part = append(part, q)
			}
		}
		rs = append(rs, resultOf(t, part, rename))
	}
	m, err := Results(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != len(whole.Steps) {
		t.Fatalf("%d steps after the merge, want %d as one process reports them", len(m.Steps), len(whole.Steps))
	}
	for i, s := range m.Steps {
		if w := whole.Steps[i]; s.Name != w.Name || s.Requests != w.Requests || s.Failed != w.Failed {
			t.Errorf("step %d = %s %d/%d, want %s %d/%d", i, s.Name, s.Requests, s.Failed, w.Name, w.Requests, w.Failed)
		}
	}
}

// The engine that ran the users survives a merge (it was dropped: merged
// `--workers` results and every gates/sweep top level lost it), and a
// merge of parts that ran different engines says so.
func TestMergeKeepsTheEngine(t *testing.T) {
	mk := func(idx int, engine string) *result.Result {
		return resultOf(t, []req{{0, sample.OK, 500}}, func(r *result.Result) {
			r.Run.Segment = result.Segment{Index: idx, Count: 2}
			r.Run.Engine = engine
		})
	}
	for _, tc := range []struct{ a, b, want string }{
		{"loop", "loop", "loop"},
		{"goroutines", "goroutines", "goroutines"},
		{"loop", "goroutines", result.EngineMixed},
		{"", "loop", result.EngineMixed},
		{"", "", ""},
	} {
		m, err := Options{}.Results([]*result.Result{mk(0, tc.a), mk(1, tc.b)})
		if err != nil {
			t.Fatal(err)
		}
		if m.Run.Engine != tc.want {
			t.Errorf("%q + %q merged to engine %q, want %q", tc.a, tc.b, m.Run.Engine, tc.want)
		}
	}
}
