package report

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// A level the generator lagged on is no verdict on the target: the
// report's SLO row says so beside its ✓ or ✗. Before, it read a bare ✓.
func TestLevelsTableMarksSuspectLevels(t *testing.T) {
	slo := []result.Threshold{{Expr: "p95 < 1s", Pass: true}}
	r := &result.Result{Levels: []result.Level{
		{Vary: "users", Value: 10, Pass: true, SLO: slo},
		{Vary: "users", Value: 20, Pass: true, SLO: slo, Suspect: "generator lag p99 80ms"},
	}}
	tb, err := levelsTable(r)
	if err != nil {
		t.Fatal(err)
	}
	last := tb.Rows[len(tb.Rows)-1]
	if len(last) != 3 || last[0] != "SLO" || last[1] != "✓" || last[2] != "✓ (suspect)" {
		t.Errorf("SLO row %q, want ✓ and ✓ (suspect)", last)
	}
}
