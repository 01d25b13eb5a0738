package gate

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

func TestJudge(t *testing.T) {
	pass := result.Threshold{Expr: "p95 < 300ms", Pass: true}
	failed := result.Threshold{Expr: "error_rate < 1%", Pass: false}
	broken := result.Threshold{Expr: "p95{step:nope} < 1s", Pass: true, Error: "no step nope"}
	for _, c := range []struct {
		name string
		o    Outcome
		want Verdict
	}{
		{"nothing to judge", Outcome{}, Pass},
		{"thresholds pass", Outcome{Thresholds: []result.Threshold{pass, pass}}, Pass},
		{"a threshold fails", Outcome{Thresholds: []result.Threshold{pass, failed}}, Fail},
		{"a threshold cannot be evaluated", Outcome{Thresholds: []result.Threshold{broken}}, Fail},
		{"a level fails", Outcome{LevelFailed: true}, Fail},
		{"a level fails, thresholds pass", Outcome{LevelFailed: true, Thresholds: []result.Threshold{pass}}, Fail},
		{"incomplete, thresholds pass", Outcome{Incomplete: true, Thresholds: []result.Threshold{pass}}, Incomplete},
		{"incomplete outranks a failed threshold", Outcome{Incomplete: true, Thresholds: []result.Threshold{failed}}, Incomplete},
		{"incomplete outranks a failed level", Outcome{Incomplete: true, LevelFailed: true}, Incomplete},
	} {
		if got := Judge(c.o); got != c.want {
			t.Errorf("%s: Judge = %v, want %v", c.name, got, c.want)
		}
	}
}
