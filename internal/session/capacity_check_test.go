package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

func capacityPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("plan.yaml", []byte(`target: http://127.0.0.1:9
scenarios:
  voter: {steps: [{name: POST vote, post: /vote}]}
load: {stages: [{duration: 1s, rate: 10/s}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// capacity --slo naming a step the plan does not have is refused before
// any load, with a did-you-mean, as the same criterion in the plan is.
// Before, the search ran a level, judged the criterion unmeasurable,
// and exited 1: "no rate tried met the SLOs", read as a target with no
// capacity.
func TestCapacitySLONamingNoStepIsRefused(t *testing.T) {
	r := CapacityRequest{Plan: capacityPlan(t), PlanFile: "plan.yaml", SLO: []string{"POST vot: p99 < 1s"},
		Start: 10, StepHold: 2 * time.Second, Budget: time.Minute}
	err := Process{}.checkCapacity(r)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), `did you mean "POST vote"?`) {
		t.Fatalf("checkCapacity: %v, want exit 2 with a did-you-mean", err)
	}
	r.SLO = []string{"POST vote: p99 < 1s"}
	if err := (Process{}).checkCapacity(r); err != nil {
		t.Errorf("a step the plan has: %v", err)
	}
}

// A budget shorter than one level runs no level: a usage error before any
// load (exit 2), not a failed run (exit 3) after the search gave up.
func TestCapacityBudgetShorterThanALevelIsRefused(t *testing.T) {
	r := CapacityRequest{Plan: capacityPlan(t), PlanFile: "plan.yaml", SLO: []string{"p95 < 1s"},
		Start: 10, StepHold: 10 * time.Second, Budget: 5 * time.Second}
	err := Process{}.checkCapacity(r)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "--budget 5s is shorter than one level") {
		t.Fatalf("checkCapacity: %v, want exit 2 naming the budget", err)
	}
}
