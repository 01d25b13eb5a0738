package dist

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// A level's Job runs the level's segment as a local --workers process
// does, and its deadline counts the level's length, not the plan's load.
func TestLevelManifest(t *testing.T) {
	p, whole := testManifest(t, 3)
	now := time.Date(2026, 5, 1, 11, 58, 0, 0, time.UTC)
	m, err := BuildManifest(p, K8s{Namespace: "load", Segments: 3, StartAt: now.Add(time.Minute), PlanFile: testPlan, Now: now,
		Name: "gates-l2", Level: &LevelRun{Vary: "users", Value: 250, Ramp: 10 * time.Second, Hold: time.Minute, Lasts: 100 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(m.Job.Spec.Template.Spec.Containers[0].Args, " ")
	want := "sweep /plan/plan.yaml --users 250 --ramp 10s --hold 1m0s --segment $(JOB_COMPLETION_INDEX)/3 --start-at 2026-05-01T11:59:00Z --start-grace 30s --emit-result -q -o /tmp/result.json"
	if args != want {
		t.Errorf("a level's pod runs\n  %s\nwant\n  %s", args, want)
	}
	if got := m.Job.Annotations["stampede.io/level"]; got != "users 250" {
		t.Errorf("level annotation %q", got)
	}
	deadline := time.Duration(*m.Job.Spec.ActiveDeadlineSeconds) * time.Second
	if want := time.Minute + 30*time.Second + 100*time.Second + p.Load.Grace + 10*time.Minute; deadline != want {
		t.Errorf("deadline %v, want %v (start, grace, the level's length, the plan's grace, 10m)", deadline, want)
	}
	if !strings.HasPrefix(strings.Join(whole.Job.Spec.Template.Spec.Containers[0].Args, " "), "run /plan/plan.yaml --segment") {
		t.Errorf("a plan's pod no longer runs the plan: %v", whole.Job.Spec.Template.Spec.Containers[0].Args)
	}
}

// A level's pod leaves a sweep's result: its segment is its level's (the
// top figures are the levels combined, one whole).
func TestSegmentOfLevelResult(t *testing.T) {
	lv := &result.Result{Run: result.RunInfo{Segment: result.Segment{Index: 1, Count: 2}}}
	top := &result.Result{Run: result.RunInfo{Segment: result.Segment{Index: 0, Count: 1}}, Levels: []result.Level{{Result: lv}}}
	if s := segmentOf(top); s != (result.Segment{Index: 1, Count: 2}) {
		t.Errorf("segment %v, want the level's 1/2", s)
	}
	run := &result.Result{Run: result.RunInfo{Segment: result.Segment{Index: 2, Count: 3}}}
	if s := segmentOf(run); s != (result.Segment{Index: 2, Count: 3}) {
		t.Errorf("segment %v, want the run's 2/3", s)
	}
}
