package conn

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A fleet larger than one hub process: one scenario spread by tenant over
// two `stampede demo` processes (urls:, spread: tenant), run as two
// worker processes. The merged result's count for each hub equals that
// hub's own (connections at the peak, pushes written), and the summary
// prints a line per hub.
func TestHubsSpreadAcrossWorkers(t *testing.T) {
	a, b := demoProcess(t), demoProcess(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
tenants: {count: 6}
scenarios:
  display:
    per_tenant: 2
    signalr:
      urls: [%s/hubs/kitchen, %s/hubs/kitchen]
      spread: tenant
      invoke: [{method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 5s}]
      listen: [OrderPlaced]
  customer:
    per_tenant: 1
    steps:
      - think: 500ms
      - {name: order, post: "/restaurants/{{ tenant }}/orders", json: {n: 1}, expect: {status: 201}}
load: {grace: 2s, stages: [{duration: 3s, users: 6}]}
`, a, a, b), nil)
	out := filepath.Join(t.TempDir(), "res.json")
	o := e2etest.Stampede(t, 90*time.Second, filepath.Dir(plan), "run", plan, "--workers", "2", "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "display")
	if len(cs.Hubs) != 2 || cs.Opened != 12 {
		t.Fatalf("hubs %+v, opened %d", cs.Hubs, cs.Opened)
	}
	for i, url := range []string{a, b} {
		h, own := cs.Hubs[i], hubStats(t, url)
		// Tenants 1, 3, 5 on the first hub, 2, 4, 6 on the second; the
		// orders go to the first only.
		if h.URL != url+"/hubs/kitchen" || h.Opened != 6 || h.Failed != 0 || h.PeakOpen != 6 || own.Peak != 6 || h.Pushes != int64(own.Written) {
			t.Errorf("hub %d: %+v; the hub's own count %+v", i, h, own)
		}
		line := fmt.Sprintf("Hub %s/hubs/kitchen: 6 opened, 0 failed; peak 6 open, 6 open at the end; %d pushes", url, h.Pushes)
		if !strings.Contains(o.Stdout, line) {
			t.Errorf("summary lacks %q\n%s", line, o.Stdout)
		}
	}
	if cs.Hubs[0].Pushes == 0 || cs.Hubs[1].Pushes != 0 {
		t.Errorf("pushes by hub %d, %d: want the ordering hub's only", cs.Hubs[0].Pushes, cs.Hubs[1].Pushes)
	}
}
