package vu

import (
	"regexp"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

// A connection's message yields what an HTTP answer with the same body
// yields (TestJSONCaptureKeepsNumbersExact): the same numbers as written,
// the same nested text, and the same words when a capture finds nothing.
func TestCaptureMessageReadsAsHTTP(t *testing.T) {
	msg := []byte(`{"id": 1234567890123456789, "price": 1.50, "n": {"big": 9007199254740993}}`)
	caps := []plan.Capture{
		{Name: "id", Slot: 0, Kind: plan.CaptureJSON, JSONPath: []string{"id"}},
		{Name: "price", Slot: 1, Kind: plan.CaptureJSON, JSONPath: []string{"price"}},
		{Name: "nested", Slot: 2, Kind: plan.CaptureJSON, JSONPath: []string{"n"}},
		{Name: "re", Slot: 3, Kind: plan.CaptureRegex, Regex: regexp.MustCompile(`"price": ([\d.]+)`)},
	}
	env := &plan.Env{Captures: make([]string, 4)}
	if err := CaptureMessage(nil, caps, msg, env); err != nil {
		t.Fatal(err)
	}
	want := []string{"1234567890123456789", "1.50", `{"big":9007199254740993}`, "1.50"}
	for i, w := range want {
		if env.Captures[i] != w {
			t.Errorf("capture %s = %q, want %q", caps[i].Name, env.Captures[i], w)
		}
	}
	missing := []plan.Capture{{Name: "id", Kind: plan.CaptureJSON, JSONPath: []string{"nope"}}}
	err := CaptureMessage(nil, missing, msg, env)
	if err == nil || err.Error() != `capture "id" found nothing` {
		t.Errorf("error %v, want the HTTP step's wording", err)
	}
	if err := CaptureMessage(nil, missing, []byte("not json"), env); err == nil {
		t.Error("a capture from a message that is not JSON found something")
	}
}
