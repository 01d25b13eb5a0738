package run

import (
	"context"
	"net/http"
	"testing"
)

// Closed-model users whose first step fails still think before their next
// iteration: 3 users with an hour of think after a failing step send 3
// requests in a short stage, not one per turn of a tight loop.
func TestFailingClosedUsersStillThink(t *testing.T) {
	srv, seen := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - get: /a
      - think: 1h
      - get: /b
load: {grace: 1s, stages: [{duration: 500ms, users: 3}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Totals.Requests != 3 || seen.Load() != 3 || res.Totals.ByClass["server_error"] != 3 {
		t.Errorf("requests %d (server saw %d, by class %v), want one failed /a per user", res.Totals.Requests, seen.Load(), res.Totals.ByClass)
	}
}
