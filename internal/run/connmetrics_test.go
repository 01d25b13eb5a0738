package run

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// The step names are result keys: typed ops must spell them as the
// strings did before, or result files and thresholds naming them break.
func TestConnStepNames(t *testing.T) {
	p := connPlan(t, `
target: http://127.0.0.1:1
scenarios:
  display:
    users: 1
    signalr:
      url: /hubs/kitchen
      invoke:
        - {method: JoinRestaurant, args: ["1"]}
        - {send: Ping}
        - {stream: Orders}
        - {invoke: JoinRestaurant}
      listen: [OrderPlaced, OrderReady]
      timestamp: 0.sentAt
  bare:
    users: 1
    signalr: {url: /hubs/kitchen, skip_negotiate: true, listen: [OrderPlaced]}
  ticker:
    users: 1
    websocket:
      url: /feed
      steps:
        - send: hello
        - name: joined
          wait: {regex: "^ok", timeout: 1s}
        - hold: 1s
load: {stages: [{duration: 1s, users: 1}]}
`)
	want := map[string][]string{
		"display": {"negotiate", "negotiate redirect", "negotiate restart", "upgrade", "handshake", "invoke JoinRestaurant", "send Ping", "stream Orders", "push OrderPlaced", "push OrderReady", "session"},
		// No timestamp: pushes are counted, not timed, so no push steps.
		"bare":   {"upgrade", "handshake", "session"},
		"ticker": {"upgrade", "send 1", "joined", "session"},
	}
	for _, sc := range p.Scenarios {
		if got := connSteps(sc); !reflect.DeepEqual(got, want[sc.Name]) {
			t.Errorf("%s: steps %q, want %q", sc.Name, got, want[sc.Name])
		}
	}
}

// An op the scenario's listing lacks is counted, not lost without trace.
func TestConnRecorderCountsUnlistedOps(t *testing.T) {
	names := []string{"upgrade", "handshake", "session"}
	ids := map[string]int{}
	var infos []metrics.StepInfo
	for i, n := range names {
		ids[n] = i
		infos = append(infos, metrics.StepInfo{Scenario: "s", Name: n, Group: "signalr"})
	}
	a := newConnRecorder(metrics.New(infos, 1), ids)
	a.Record(signalr.OpUpgrade, sample.OK, time.Millisecond, nil)
	a.Record(signalr.OpHandshake, sample.OK, time.Millisecond, nil)
	a.RecordWS(ws.OpSession, sample.OK, time.Second, nil)
	if n := a.unlisted.Load(); n != 0 {
		t.Fatalf("listed ops counted as unlisted: %d", n)
	}
	a.Record(signalr.OpNegotiate, sample.OK, time.Millisecond, nil)
	a.Record(signalr.InvokeOp("Join"), sample.Other, 0, nil)
	if n := a.unlisted.Load(); n != 2 {
		t.Errorf("unlisted = %d, want 2", n)
	}
}

// A call whose arguments could not be built counts as a failure of its
// step with its message but no latency sample: nothing was sent. Before,
// it was recorded with a 0 µs latency, which pulled latency_all down.
func TestConnRecorderUnsentHasNoLatency(t *testing.T) {
	names := []string{"invoke Join", "session"}
	ids := map[string]int{}
	var infos []metrics.StepInfo
	for i, n := range names {
		ids[n] = i
		infos = append(infos, metrics.StepInfo{Scenario: "s", Name: n, Group: "signalr"})
	}
	rec := metrics.New(infos, 1)
	a := newConnRecorder(rec, ids)
	a.Unsent(signalr.InvokeOp("Join"), sample.Other, errors.New("bad args"))
	st := rec.Snapshot().Steps[0]
	if st.Requests != 1 || st.Failed != 1 || st.LatencyAll.Count != 0 || len(st.Errors) != 1 || st.Errors[0].Message != "bad args" {
		t.Errorf("step %+v: want one failure, its message, no latency", st)
	}
}
