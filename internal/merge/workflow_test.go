package merge

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// Each segment runs its own setup and teardown: the merged result adds
// their requests and renewals up and keeps every segment's steps.
func TestMergeWorkflow(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(idx int, renewals int64, teardownErr string) *result.Result {
		return segmentResult(t, idx, 2, t0, func(r *result.Result) {
			r.Workflow = &result.Workflow{
				Renewals: renewals,
				Setup:    &result.Phase{Requests: 1, Steps: []result.Step{{Name: "create", Requests: 1}}},
				Teardown: &result.Phase{Requests: 1, Error: teardownErr},
			}
		})
	}
	m, err := Results([]*result.Result{mk(0, 3, ""), mk(1, 4, "cut off: context deadline exceeded")})
	if err != nil {
		t.Fatal(err)
	}
	w := m.Workflow
	if w == nil || w.Renewals != 7 || w.Setup.Requests != 2 || len(w.Setup.Steps) != 2 || w.Teardown.Requests != 2 ||
		w.Teardown.Error != "cut off: context deadline exceeded" {
		t.Fatalf("merged workflow %+v", w)
	}
	m, err = Results([]*result.Result{segmentResult(t, 0, 2, t0, nil), segmentResult(t, 1, 2, t0, nil)})
	if err != nil || m.Workflow != nil {
		t.Fatalf("plans without a workflow merged into %+v (%v)", m.Workflow, err)
	}
}
