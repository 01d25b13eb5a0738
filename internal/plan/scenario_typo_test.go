package plan

import (
	"strings"
	"testing"
)

// A typo of steps: the one problem is the typo. Before, "scenario has no
// request step" came first (its position is the scenario's, above the
// key), and sent the reader looking for a second problem.
func TestStepsTypoIsTheOneProblem(t *testing.T) {
	src := "target: http://127.0.0.1:9\nscenarios:\n  s:\n    stpes:\n      - get: /\nload: {stages: [{duration: 1s, users: 1}]}\n"
	_, err := Parse("plan.yaml", []byte(src), nil)
	if err == nil {
		t.Fatal("a plan with stpes: loaded")
	}
	msg := err.Error()
	if !strings.Contains(msg, `plan.yaml:4:5: unknown key "stpes" in scenario "s": did you mean "steps"?`) {
		t.Errorf("%s\nwant the typo named at 4:5", msg)
	}
	if strings.Contains(msg, "no request step") {
		t.Errorf("%s\nwant only the typo, not its knock-on", msg)
	}
	// With no typo, a scenario without requests is still refused.
	_, err = Parse("plan.yaml", []byte(strings.Replace(src, "stpes:\n      - get: /", "steps: [{think: 1s}]", 1)), nil)
	if err == nil || !strings.Contains(err.Error(), "no request step") {
		t.Errorf("a scenario of one think step: %v, want no request step", err)
	}
}
