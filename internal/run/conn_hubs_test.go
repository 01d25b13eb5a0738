package run

import (
	"context"
	"fmt"
	"testing"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

func TestHubOfSlot(t *testing.T) {
	three := &plan.SignalRSpec{URLs: make([]*plan.Template, 3), Spread: plan.SpreadRoundRobin}
	byTenant := &plan.SignalRSpec{URLs: make([]*plan.Template, 3), Spread: plan.SpreadTenant}
	one := &plan.SignalRSpec{}
	for _, c := range []struct {
		spec        *plan.SignalRSpec
		idx, tenant int
		want        uint16
	}{
		{three, 0, 1, 0}, {three, 1, 1, 1}, {three, 2, 1, 2}, {three, 3, 1, 0}, {three, 7, 2, 1},
		{byTenant, 0, 1, 0}, {byTenant, 1, 1, 0}, {byTenant, 2, 2, 1}, {byTenant, 9, 4, 0}, {byTenant, 5, 6, 2},
		{one, 5, 2, 0}, {nil, 5, 2, 0},
	} {
		if got := hubOfSlot(c.spec, c.idx, c.tenant); got != c.want {
			t.Errorf("hubOfSlot(spread %v, slot %d, tenant %d) = %d, want %d", c.spec, c.idx, c.tenant, got, c.want)
		}
	}
}

// hubFleet starts two demo hubs and a plan spreading a tenant's two
// displays on one of them, with customers ordering on the first only.
func hubFleet(t *testing.T) (urls [2]string, p *plan.Plan) {
	for i := range urls {
		u, stop, err := demo.Start(context.Background(), "", demo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stop() })
		urls[i] = u
	}
	p = connPlan(t, fmt.Sprintf(`
target: %s
tenants: {count: 4}
scenarios:
  display:
    per_tenant: 2
    signalr:
      urls: [%s/hubs/kitchen, %s/hubs/kitchen]
      spread: tenant
      invoke: [{method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 2s}]
      listen: [OrderPlaced]
  customer:
    per_tenant: 1
    steps:
      - think: 300ms
      - {name: order, post: "/restaurants/{{ tenant }}/orders", json: {n: 1}, expect: {status: 201}}
load: {grace: 1s, stages: [{duration: 2s, users: 4}]}
`, urls[0], urls[0], urls[1]))
	return urls, p
}

// A scenario spread over two hubs by tenant: tenants 1 and 3 on the
// first, 2 and 4 on the second. Each hub's line counts what that hub
// saw: its connections at the peak, and the pushes it wrote (the orders
// go to the first hub only).
func TestHubsCountedPerHub(t *testing.T) {
	urls, p := hubFleet(t)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	cs := connScenario(t, res, "display")
	checkConnSums(t, cs)
	if len(cs.Hubs) != 2 {
		t.Fatalf("hubs %+v", cs.Hubs)
	}
	var opened, pushes int64
	for i, h := range cs.Hubs {
		st := stats(t, urls[i]).Kitchen
		if h.URL != urls[i]+"/hubs/kitchen" || h.Opened != 4 || h.Failed != 0 || h.PeakOpen != 4 || h.OpenAtEnd != 4 || st == nil || st.Peak != 4 || h.Pushes != int64(st.Written) {
			t.Errorf("hub %d: %+v; the hub saw %+v", i, h, st)
		}
		opened += h.Opened
		pushes += h.Pushes
	}
	if opened != cs.Opened || pushes != cs.Pushes["OrderPlaced"]+cs.OtherPushes || cs.PeakOpen != 8 {
		t.Errorf("hubs opened %d pushed %d; scenario %+v", opened, pushes, cs)
	}
	if cs.Hubs[0].Pushes == 0 || cs.Hubs[1].Pushes != 0 {
		t.Errorf("pushes by hub %d, %d: want the ordering hub's only", cs.Hubs[0].Pushes, cs.Hubs[1].Pushes)
	}
}

// Segments spread their slots over the hubs as the whole run does: the
// two halves' hub counts add up to four connections on each hub.
func TestHubsSplitBySegment(t *testing.T) {
	_, p := hubFleet(t)
	var hubs []result.HubCount
	for i := range 2 {
		res, err := Run(context.Background(), p, Options{Segment: Segment{Index: i, Count: 2}})
		if err != nil {
			t.Fatal(err)
		}
		cs := connScenario(t, res, "display")
		hubs = result.AddHubs(hubs, cs.Hubs)
	}
	if len(hubs) != 2 || hubs[0].Opened != 4 || hubs[1].Opened != 4 || hubs[0].PeakOpen != 4 || hubs[1].PeakOpen != 4 {
		t.Errorf("segments' hubs summed: %+v", hubs)
	}
}
