package session

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// A snapshot taken while the first level runs is judged so far by the
// SLO and the plan's thresholds: the live dashboard of a plan with
// thresholds said "no thresholds (partial result)" until a level ended.
func TestLevelsSnapshotJudgesTheRunningLevel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	p, err := plan.Parse("plan.yaml", []byte(`target: `+srv.URL+`
scenarios:
  s: {steps: [{get: /}, {think: 20ms}]}
load:
  stages: [{duration: 1s, users: 1}]
thresholds: ["p99 < 10s"]
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	e := &Levels{Plan: p, Vary: plan.VaryUsers, Values: []float64{1},
		Options: levels.Options{Run: run.Options{SkipPreflight: true}, Hold: 2 * time.Second, SLO: []string{"error_rate < 100%"}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Execute(ctx, Control{})
	}()
	defer func() { cancel(); <-done }()
	for {
		snap := e.Snapshot("")
		if snap != nil && snap.Totals.Requests > 0 {
			var judged []string
			for _, th := range snap.Thresholds {
				judged = append(judged, th.Expr)
			}
			if got := strings.Join(judged, "; "); got != "users 1: error_rate < 100%; users 1: p99 < 10s" {
				t.Errorf("the running level judged by %q; want its SLO and the plan's threshold", got)
			}
			return
		}
		select {
		case <-done:
			t.Fatal("the level ended before a snapshot held a request")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
