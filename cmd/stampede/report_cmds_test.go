package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/session"
)

// writeCompareResult writes a 20 s run whose seconds all have the p50
// given (wobbling by a per-run few microseconds), and returns its path.
func writeCompareResult(t *testing.T, dir, name string, p50us, wobble int64) string {
	t.Helper()
	h := result.NewHistogram()
	const n = 20
	r := &result.Result{
		Schema: result.Schema,
		Plan:   result.PlanInfo{Name: "cmp", SHA256: "0123456789abcdef"},
		Run:    result.RunInfo{DurationS: n, Model: "closed", LatencyFrom: "send"},
	}
	s := result.Series{IntervalS: 1, Failed: map[string][]int64{}}
	for i := range n {
		v := p50us + wobble*int64(i%3)
		for range 50 {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		s.T = append(s.T, float64(i))
		for _, col := range []*[]int64{&s.Started, &s.Completed, &s.OK} {
			*col = append(*col, 50)
		}
		s.P50US, s.P95US, s.P99US = append(s.P50US, v), append(s.P95US, v), append(s.P99US, v)
		s.Active, s.InFlight, s.Dropped = append(s.Active, 5), append(s.InFlight, 1), append(s.Dropped, 0)
		s.LagP99US, s.Target = append(s.LagP99US, 20), append(s.Target, 5)
	}
	r.Series = s
	r.Totals = result.Totals{Requests: 50 * n, Successful: 50 * n, ByClass: map[string]int64{}, LatencyOK: result.LatencyOf(h), LatencyAll: result.LatencyOf(h)}
	r.Steps = []result.Step{{Scenario: "s", Name: "GET /", Requests: 50 * n, Successful: 50 * n, ByClass: map[string]int64{}, LatencyOK: result.LatencyOf(h), LatencyAll: result.LatencyOf(h)}}
	path := filepath.Join(dir, name+".json")
	if err := result.Write(path, r); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCompare(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newCompareCmd(session.Process{Stdout: &out, Stderr: &out})
	cmd.InitDefaultHelpFlag()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.RunE(cmd, args)
	return out.String(), err
}

// --vs splits the files in two sides wherever the flags are, the verdict
// is one on the other side, and --fail-on-worse fails on it.
func TestCompareVs(t *testing.T) {
	dir := t.TempDir()
	var a, b []string
	for i, name := range []string{"a1", "a2", "a3"} {
		a = append(a, writeCompareResult(t, dir, name, 2000, int64(i+1)))
	}
	for i, name := range []string{"b1", "b2", "b3"} {
		b = append(b, writeCompareResult(t, dir, name, 3000, int64(i+1)))
	}
	args := append(append(append([]string{"--format", "text"}, a...), "--vs"), b...)
	out, err := runCompare(t, append(args, "--fail-on-worse", "--min-effect", "5%")...)
	var ee *exitError
	if !errors.As(err, &ee) || ee.Code != exitThreshold || !strings.Contains(err.Error(), "b1+b2+b3 (3 runs) is worse than a1+a2+a3 (3 runs)") {
		t.Fatalf("err %v, want exit 1 naming both sides\n%s", err, out)
	}
	for _, want := range []string{"Verdict (noise-aware, against a1+a2+a3 (3 runs)):\n  b1+b2+b3 (3 runs): worse\n", "rests on 3 and 3 runs", "at least 5 % (--min-effect); no change needs the whole interval within ±5 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The same runs the other way round are better, and pass.
	if out, err := runCompare(t, append(append(b, "--vs"), append(a, "--fail-on-worse")...)...); err != nil || !strings.Contains(out, "a1+a2+a3 (3 runs): better") {
		t.Errorf("reversed: err %v\n%s", err, out)
	}
}

// A file compared with itself needs no --labels: the second use is
// suffixed, and a run is never worse than itself.
func TestCompareSameFileTwice(t *testing.T) {
	x := writeCompareResult(t, t.TempDir(), "x", 2000, 1)
	out, err := runCompare(t, x, x, "--fail-on-worse")
	if err != nil {
		t.Fatalf("compare x x: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Verdict (noise-aware, against "+x+"):\n  "+x+"#2: within noise\n") {
		t.Errorf("output lacks the suffixed second run judged within noise:\n%s", out)
	}
}

func TestCompareArgsRefused(t *testing.T) {
	dir := t.TempDir()
	x, y := writeCompareResult(t, dir, "x", 2000, 1), writeCompareResult(t, dir, "y", 2000, 2)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vs", x, y}, "--vs needs the baseline's result files before it"},
		{[]string{x, y, "--vs"}, "--vs needs result files after it"},
		{[]string{x, "--vs", y, "--vs", x}, "--vs is given twice"},
		{[]string{x, "--vs", y}, "repeats need at least two runs on each side"},
		{[]string{x}, "at least two result files"},
		{[]string{x, y, "--min-effect", "150%"}, "--min-effect \"150%\""},
		{[]string{x, y, "--min-effect", "five"}, "want a percentage such as 5%"},
		{[]string{x, y, "--bogus"}, "unknown flag: --bogus"},
	} {
		_, err := runCompare(t, c.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.Code != exitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}
