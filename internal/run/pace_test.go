package run

import (
	"context"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"
)

// A drawn pace spaces a user's iteration starts by draws from its
// distribution rather than by the mean: with an exponential the intervals
// spread as widely as they are long (coefficient of variation 1), where
// a fixed pace keeps them alike. A busy machine only adds spread, so the
// check cannot fail for lack of it; and iterations are counted, not
// timed.
func TestDrawnPaceVariesIntervals(t *testing.T) {
	var (
		mu sync.Mutex
		at []time.Time
	)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
	})
	p := mustPlan(t, "target: "+srv.URL+`
scenarios:
  s:
    steps:
      - name: GET
        get: /
load:
  pace: {exponential: 40ms, max: 800ms}
  grace: 1s
  stages: [{duration: 2500ms, users: 1}]
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 10 || res.Totals.Requests != int64(len(at)) || res.Totals.Failed != 0 {
		t.Fatalf("%d requests served, %d recorded (%d failed): want at least 10, all recorded", len(at), res.Totals.Requests, res.Totals.Failed)
	}
	var sum, sq float64
	n := float64(len(at) - 1)
	for i := 1; i < len(at); i++ {
		d := float64(at[i].Sub(at[i-1]))
		sum += d
		sq += d * d
	}
	mean := sum / n
	cv := math.Sqrt(math.Max(sq/n-mean*mean, 0)) / mean
	if cv < 0.4 {
		t.Errorf("intervals between a user's iteration starts vary by %.2f of their mean over %d iterations; an exponential pace varies by about 1", cv, len(at))
	}
}
