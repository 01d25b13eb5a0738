package run

import (
	"context"
	"net/http/httptest"
	"testing"
)

// Connections that open and close between two samples of the control
// loop (every 50 ms) still count in the peak: before, the peak was
// sampled, and 644 connections opened reported a peak of 0.
func TestPeakOpenCountsShortConnections(t *testing.T) {
	srv := httptest.NewServer(&wsServer{})
	defer srv.Close()
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  brief:
    users: 1
    websocket:
      url: /x
      reconnect: 1ms
      steps:
        - send: hi
        - close: {code: 1000, reason: done}
load: {stages: [{duration: 1s, users: 1}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	cs := connScenario(t, res, "brief")
	checkConnSums(t, cs)
	if cs.Opened < 2 || cs.PeakOpen != 1 {
		t.Errorf("opened %d, peak open %d: want a peak of exactly 1 for one slot", cs.Opened, cs.PeakOpen)
	}
}
