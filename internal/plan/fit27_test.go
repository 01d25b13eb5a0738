package plan

import (
	"math"
	"strings"
	"testing"
)

// A rate no number of processes can send is refused without advice to
// split it: before, 1e308/s advised --workers -9223372036854775808.
func TestAbsurdRateAdvisesNoWorkers(t *testing.T) {
	p := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 1e308/s}]}
`, nil)
	err := p.CheckFit(1, math.MaxUint64)
	if err == nil {
		t.Fatal("a rate of 1e308/s fits one process")
	}
	msg := err.Error()
	if strings.Contains(msg, "--workers") || !strings.Contains(msg, "lower the rate") || !strings.Contains(msg, "rate 1e+308/s") {
		t.Errorf("advice for 1e308/s: %s", msg)
	}
	// A rate a few processes can send still gets the number.
	p = mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 3000000/s}]}
`, nil)
	if err := p.CheckFit(1, math.MaxUint64); err == nil || !strings.Contains(err.Error(), "--workers ") || strings.Contains(err.Error(), "--workers -") {
		t.Errorf("advice for 3,000,000/s: %v", err)
	}
}
