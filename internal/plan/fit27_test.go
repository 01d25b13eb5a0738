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

// A fit error about stages the plan made from waves names where the waves
// were written: before, it began ":1:1:", naming no file, line or column.
func TestFitErrorOfWavesNamesTheWaves(t *testing.T) {
	p := mustParse(t, `target: http://127.0.0.1:1
tenants:
  count: 10
  waves: [{share: 0.5, offset: 0s}, {share: 0.5, offset: 1s}]
scenarios:
  s: {steps: [{get: /}]}
load:
  stages:
    - {duration: 1s, users: 500000}
`, nil)
	err := p.CheckFit(1, 256)
	if err == nil {
		t.Fatal("500,000 users fit 256 open files")
	}
	if !strings.Contains(err.Error(), ":4:") {
		t.Errorf("%v: want the line of waves:, 4", err)
	}
}
