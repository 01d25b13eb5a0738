package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// Levels that tell the truth: a level is measured from when its
// population is in place, whatever the ramp planned, and the levels of one
// command are one test for the plan's data.

// slowHub is the demo target (kitchen hub and orders) behind a negotiate
// endpoint that serves one connection at a time, each after a pause: a hub
// that opens connections slower than the plan ramps them, as a
// restaurant-ordering hub's did at its 2,000-restaurant gate. n connections take at least n × pause
// to come up, however fast or busy the machine.
func slowHub(t *testing.T, pause time.Duration) string {
	t.Helper()
	d := demo.New(demo.Options{})
	h := d.Handler()
	var one sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/negotiate") {
			one.Lock()
			time.Sleep(pause)
			one.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		d.CloseHub()
	})
	return srv.URL
}

const restaurantGates = `name: restaurant-gates
target: %s
tenants: {count: 2}
scenarios:
  kitchen-display:
    per_tenant: 2
    signalr:
      url: /hubs/kitchen
      invoke:
        - {method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 10s}
      listen: [OrderPlaced]
  customer:
    per_tenant: 1
    steps:
      - think: 50ms..100ms
      - name: POST order
        post: /restaurants/{{ tenant }}/orders
        json: {table: 1, items: [{sku: taco-al-pastor, qty: 1}]}
        expect: {status: 201}
load:
  grace: 1s
  stages:
    - {duration: 1s, users: 2}
gates:
  vary: tenants
  levels: [1, %d]
  ramp: 300ms
  hold: 1s
  slo: ["error_rate < 5%%"]
`

// The restaurant-ordering hub's third gate in small: the hub needs at least 60 × 30ms =
// 1.8s to open the last level's 60 kitchen displays, against a 300ms ramp.
// The level must be measured from when they are all open - no connection
// opens inside the measured part - and say how long its ramp took.
func TestGatesMeasureFromPopulationInPlace(t *testing.T) {
	const tenants, pause = 30, 30 * time.Millisecond
	url := slowHub(t, pause)
	path := e2etest.WritePlan(t, fmt.Sprintf(restaurantGates, url, tenants), nil)
	dir := filepath.Dir(path)
	out := filepath.Join(dir, "gates.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "gates", path, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0, every gate passed\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(res.Levels))
	}
	l := res.Levels[1]
	r := l.Result
	conns := 2 * tenants
	minRamp := (time.Duration(conns) * pause).Seconds()
	if l.RampS < minRamp || !l.RampOverran || l.RampPlannedS != 0.3 {
		t.Errorf("ramp %.3fs (planned %.3fs, overran %v): the hub needs at least %.1fs for %d connections", l.RampS, l.RampPlannedS, l.RampOverran, minRamp, conns)
	}
	// Every display was open before the hold began; their connects are
	// still the level's, counted from its start: one of each per display.
	for _, s := range r.Steps {
		if s.Scenario == "kitchen-display" && (s.Name == "negotiate" || s.Name == "handshake") && s.Requests != int64(conns) {
			t.Errorf("%s: %d, want %d (one per display, ramp included)", s.Name, s.Requests, conns)
		}
	}
	if r.Connections == nil || len(r.Connections.Scenarios) != 1 || r.Connections.Scenarios[0].Opened != int64(conns) {
		t.Errorf("connections %+v, want %d opened", r.Connections, conns)
	}
	// The hold counts from the cut, so the measured part is never shorter
	// than it; and what was measured is what the table shows.
	if r.Run.DurationS < 1 || r.Totals.Requests == 0 || r.Totals.Successful == 0 {
		t.Fatalf("measured %.3fs, %d requests (%d ok): want the 1s hold with its orders", r.Run.DurationS, r.Totals.Requests, r.Totals.Successful)
	}
	var ok int64
	for _, n := range r.Series.OK {
		ok += n
	}
	if ok == 0 {
		t.Errorf("series ok %v: all zero though %d requests succeeded", r.Series.OK, r.Totals.Successful)
	}
	row := tableRow(t, o.Stdout, fmt.Sprint(tenants))
	if rps := fmt.Sprintf("%.1f", float64(r.Totals.Timed())/r.Run.DurationS); !strings.Contains(row, " "+rps+" ") {
		t.Errorf("row %q lacks req/s %s (requests that ended / measured seconds)", row, rps)
	}
	if !strings.Contains(row, "(planned 300ms)") || !strings.Contains(o.Stdout, fmt.Sprintf("tenants %d: the ramp took", tenants)) {
		t.Errorf("the table does not say the ramp overran\n%s", o)
	}
	if _, found := findIndicator(res.Indicators, "saturated"); found {
		t.Errorf("saturated raised on a passing run: %v", res.Indicators)
	}
}

// tableRow is the table row that starts with the level's value.
func tableRow(t *testing.T, out, level string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == level {
			return line + " "
		}
	}
	t.Fatalf("no row for level %s in\n%s", level, out)
	return ""
}

func findIndicator(ins []result.Indicator, id string) (result.Indicator, bool) {
	for _, in := range ins {
		if in.ID == id {
			return in, true
		}
	}
	return result.Indicator{}, false
}

// A sweep's levels are one test for the plan's data: pick: unique rows
// sent at the first level are not sent again at the second, so a target
// that refuses a second vote from one voter answers no 409; and users are
// numbered on, so {{ vu }}-{{ iter }} never repeats either.
func TestSweepUniqueRowsContinueAcrossLevels(t *testing.T) {
	var mu sync.Mutex
	seen, pairs := map[string]int{}, map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("voter-id")
		mu.Lock()
		seen[id]++
		n := seen[id]
		pairs[r.Header.Get("request-id")]++
		mu.Unlock()
		if n > 1 {
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	var rows strings.Builder
	rows.WriteString("voter_id\n")
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&rows, "v%d\n", i)
	}
	path := e2etest.WritePlan(t, fmt.Sprintf(`name: votes
target: %s
data:
  voters: {file: voters.csv, pick: unique}
scenarios:
  voter:
    steps:
      - name: POST vote
        post: /votes
        headers: {voter-id: "{{ data.voters.voter_id }}", request-id: "{{ vu }}-{{ iter }}"}
        expect: {status: 201}
      - think: 10ms
load:
  stages:
    - {duration: 1s, users: 2}
`, srv.URL), map[string]string{"voters.csv": rows.String()})
	dir := filepath.Dir(path)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "sweep", path, "--users", "2,2", "--hold", "500ms", "-o", out, "-q")
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 || res.Levels[1].Result.Totals.Requests == 0 {
		t.Fatalf("want two levels that both voted\n%s", o)
	}
	mu.Lock()
	var dup int
	for _, n := range seen {
		dup += n - 1
	}
	voters := len(seen)
	var again []string
	for pair, n := range pairs {
		if n > 1 {
			again = append(again, pair)
		}
	}
	mu.Unlock()
	if len(again) > 0 {
		t.Errorf("vu-iter pairs sent again at a later level: %v", again)
	}
	if dup != 0 || res.Totals.ByClass["client_error"] != 0 {
		t.Errorf("%d votes repeated a voter of an earlier level (%d voters, by class %v)\n%s", dup, voters, res.Totals.ByClass, o)
	}
	if o.Code != 0 {
		t.Errorf("want exit 0\n%s", o)
	}
}
