package session

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// mergeSegments writes the results as segments i/len(rs) of one run and
// merges them as `stampede merge -o` does.
func mergeSegments(t *testing.T, rs ...*result.Result) (*result.Result, string, error) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, r := range rs {
		r.Run.Segment = result.Segment{Index: i, Count: len(rs)}
		r.Plan.Source = "name: t\nthresholds: [\"error_rate < 1%\"]\n"
		p := filepath.Join(dir, "seg-"+string(rune('0'+i))+".json")
		if err := result.Write(p, r); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out := filepath.Join(dir, "merged.json")
	var stdout, stderr bytes.Buffer
	err := Process{Stdout: &stdout, Stderr: &stderr}.Merge(MergeRequest{Paths: paths, Out: out})
	m, rerr := result.Read(out)
	if rerr != nil {
		t.Fatalf("merged result: %v (merge: %v, stderr %s)", rerr, err, stderr.String())
	}
	return m, stderr.String(), err
}

// A segment that was cut off makes the merged whole partial, and merge
// judged only the thresholds: it passed (exit 0) a run that did not
// complete, where run and run --workers say incomplete (exit 3).
func TestMergePartialInputIsIncomplete(t *testing.T) {
	m, stderr, err := mergeSegments(t, res(10, false, ""), res(4, true, "interrupted (Ctrl-C)"))
	if !m.Run.Partial {
		t.Fatalf("merged result not partial: %+v", m.Run)
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitRun || !strings.Contains(err.Error(), "partial") {
		t.Errorf("merge of a partial segment: err %v, want exit 3 saying the result is partial\n%s", err, stderr)
	}
}

// Whole segments merge into a whole result that passes.
func TestMergeWholeInputsPass(t *testing.T) {
	m, stderr, err := mergeSegments(t, res(10, false, ""), res(4, false, ""))
	if err != nil || m.Run.Partial || m.Totals.Requests != 14 {
		t.Errorf("err %v, partial %v, %d requests; want a pass of 14 requests\n%s", err, m.Run.Partial, m.Totals.Requests, stderr)
	}
}

// A level is judged as the levels judge it (LevelPass): one that a
// segment did not complete failed even with its SLO met, and fails the
// merge; merge marked it passed from its SLO alone, and exited 0.
func TestMergeCutLevelFails(t *testing.T) {
	level := func(n int64, partial bool) *result.Result {
		r := res(n, false, "")
		r.Levels = []result.Level{{Vary: "users", Value: 10, Result: res(n, partial, map[bool]string{true: "interrupted (Ctrl-C)"}[partial]),
			SLO: []result.Threshold{{Expr: "error_rate < 1%"}}}}
		return r
	}
	m, stderr, err := mergeSegments(t, level(10, false), level(4, true))
	if len(m.Levels) != 1 || m.Levels[0].Pass || !m.Levels[0].Result.Run.Partial {
		t.Fatalf("merged levels %+v: want one level, partial and failed", m.Levels)
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitThreshold {
		t.Errorf("merge of a cut-off level: err %v, want exit 1 (a level failed)\n%s", err, stderr)
	}
}

// Merged levels are judged level by level, and the merged result's
// thresholds are those verdicts named by level, as gates and sweep write
// them. Before, the plan's thresholds were judged again on all levels
// summed, a load that never ran, and those verdicts replaced the levels'.
func TestMergedLevelsKeepVerdictsNamedByLevel(t *testing.T) {
	level := func(n int64) *result.Result {
		r := res(n, false, "")
		r.Levels = []result.Level{
			{Vary: "users", Value: 10, Result: res(n, false, ""), SLO: []result.Threshold{{Expr: "error_rate < 1%"}}},
			{Vary: "users", Value: 20, Result: res(n, false, ""), SLO: []result.Threshold{{Expr: "error_rate < 1%"}}},
		}
		return r
	}
	m, stderr, err := mergeSegments(t, level(10), level(4))
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr)
	}
	var got []string
	for _, th := range m.Thresholds {
		got = append(got, th.Expr)
	}
	if strings.Join(got, "; ") != "users 10: error_rate < 1%; users 20: error_rate < 1%" {
		t.Errorf("thresholds %q: want each level's verdicts named by level", got)
	}
}

// Whole runs merged that did not run at the same time: merge says the
// merged rate is spread over the time between them. Before, it said
// nothing, and two 2 s runs a minute apart merged at a fifteenth of
// their rate.
func TestMergeWarnsOfRunsApart(t *testing.T) {
	dir := t.TempDir()
	a, b := res(10, false, ""), res(10, false, "")
	b.Run.Started = b.Run.Started.Add(time.Minute)
	b.Run.Ended = b.Run.Ended.Add(time.Minute)
	var paths []string
	for i, r := range []*result.Result{a, b} {
		r.Plan.Source = "name: t\n"
		p := filepath.Join(dir, fmt.Sprintf("run-%d.json", i))
		if err := result.Write(p, r); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var stdout, stderr bytes.Buffer
	if err := (Process{Stdout: &stdout, Stderr: &stderr}).Merge(MergeRequest{Paths: paths, Out: filepath.Join(dir, "m.json")}); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	if got := stderr.String(); !strings.Contains(got, "did not run at the same time (58s apart)") {
		t.Errorf("stderr %q: want the gap named", got)
	}
	// Segments of one run overlap: no warning.
	stderr.Reset()
	if _, _, err := mergeSegments(t, res(10, false, ""), res(4, false, "")); err != nil {
		t.Fatal(err)
	}
}
