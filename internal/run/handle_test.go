package run

import (
	"context"
	"testing"
	"time"
)

// A Handle gives nothing before the load starts, then partial results of
// the run so far: the counts the finished run ends with grow from there.
func TestHandleSnapshots(t *testing.T) {
	srv, seen := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {grace: 1s, stages: [{duration: 30s, users: 2}]}
`)
	var h Handle
	if s := h.Snapshot("x"); s != nil {
		t.Fatalf("snapshot before the run: %+v", s.Run)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		n   int64
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(ctx, p, Options{Handle: &h})
		if err != nil {
			done <- ran{err: err}
			return
		}
		done <- ran{n: res.Totals.Requests}
	}()
	select {
	case <-h.Started():
	case r := <-done:
		t.Fatalf("the run ended before it started: %v", r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not start within 30s")
	}
	for deadline := time.Now().Add(30 * time.Second); seen.Load() < 5 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	snap := h.Snapshot("why")
	if snap == nil || !snap.Run.Partial || snap.Run.PartialReason != "why" {
		t.Fatalf("snapshot %v: want a partial result with the reason given", snap)
	}
	checkInvariants(t, snap)
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if snap.Totals.Requests > r.n {
		t.Errorf("the snapshot counts %d requests, the finished run %d", snap.Totals.Requests, r.n)
	}
}
