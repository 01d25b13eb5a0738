package dist

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// tenantCounter is the target of the waves test: per tenant header, the
// requests of each scenario, and every (user, tenant, scenario) it saw.
type tenantCounter struct {
	mu       sync.Mutex
	byTenant map[string]map[string]int
	users    []string
}

func serveTenants(t *testing.T) (*tenantCounter, string) {
	t.Helper()
	c := &tenantCounter{byTenant: map[string]map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, sc := r.Header.Get("X-Tenant"), strings.Trim(r.URL.Path, "/")
		c.mu.Lock()
		if c.byTenant[tenant] == nil {
			c.byTenant[tenant] = map[string]int{}
		}
		c.byTenant[tenant][sc]++
		c.users = append(c.users, fmt.Sprintf("vu %s tenant %s %s", r.Header.Get("X-VU"), tenant, sc))
		c.mu.Unlock()
		w.Write([]byte("ok"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c, "http://" + ln.Addr().String()
}

// take returns what was seen since the last take, in a stable order.
func (c *tenantCounter) take() (map[string]map[string]int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	by, users := c.byTenant, c.users
	c.byTenant, c.users = map[string]map[string]int{}, nil
	sort.Strings(users)
	return by, users
}

// oneUserPerRequestPlan writes a plan whose every user sends one request
// (scenario a: 1 per tenant, b: 2 per tenant, headers naming the user and
// its tenant) and then thinks far past the end, so the requests the target
// sees are exactly the users that ever started, whatever the timing.
func oneUserPerRequestPlan(t *testing.T, dir, name, url, tenants, stages string) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	src := fmt.Sprintf(`name: %s
target: %s
tenants: %s
scenarios:
  a:
    per_tenant: 1
    steps:
      - {name: a, get: /a, headers: {X-VU: "{{ vu }}", X-Tenant: "{{ tenant }}"}}
      - think: 1m
  b:
    per_tenant: 2
    steps:
      - {name: b, get: /b, headers: {X-VU: "{{ vu }}", X-Tenant: "{{ tenant }}"}}
      - think: 1m
load:
  grace: 1s
  stages:
%s`, name, url, tenants, stages)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// split is what the target saw from one run: requests per tenant and
// scenario, and the sorted (user, tenant, scenario) lines.
type split struct {
	byTenant map[string]map[string]int
	users    []string
}

// runOneAndWorkers runs plan in one process (result one.json) and with
// --workers N (result many.json), and returns what the target saw from each.
func runOneAndWorkers(t *testing.T, dir, plan string, srv *tenantCounter, workers int) (one, many split) {
	t.Helper()
	code, stdout, stderr := runBin(t, dir, "run", plan, "-q", "-o", "one.json")
	if code != 0 {
		t.Fatalf("one process: exit %d\n%s\n%s", code, stdout, stderr)
	}
	one.byTenant, one.users = srv.take()
	code, stdout, stderr = runBin(t, dir, "run", plan, "-q", "--workers", fmt.Sprint(workers), "-o", "many.json")
	if code != 0 {
		t.Fatalf("--workers %d: exit %d\n%s\n%s", workers, code, stdout, stderr)
	}
	many.byTenant, many.users = srv.take()
	if strings.Join(many.users, "\n") != strings.Join(one.users, "\n") {
		t.Errorf("%d workers ran other users than one process:\nworkers:\n%s\none process:\n%s",
			workers, strings.Join(many.users, "\n"), strings.Join(one.users, "\n"))
	}
	return one, many
}

// A tenant pool in two waves (tenants 1–3 from the start, 4–5 from 1 s),
// 3 users per tenant (1 of scenario a, 2 of b), ramping up then holding.
// Every user sends one request and then thinks far past the end, so the
// requests are exactly the users, whatever the timing: --workers 2 must run
// the same users — ids, tenants, scenarios — as one process.
func TestWorkersSplitTenantWaves(t *testing.T) {
	dir := t.TempDir()
	srv, url := serveTenants(t)
	plan := oneUserPerRequestPlan(t, dir, "waves", url,
		"{count: 5, waves: [{share: 0.6, offset: 0s}, {share: 0.4, offset: 1s}]}",
		"    - {duration: 1s, users: 0 -> 1}\n    - {duration: 2s, users: 1}\n")
	oneRun, twoRun := runOneAndWorkers(t, dir, plan, srv, 2)
	if len(oneRun.users) != 15 {
		t.Errorf("one process: %d requests, want 15 (5 tenants × 3 users, one each):\n%s", len(oneRun.users), strings.Join(oneRun.users, "\n"))
	}
	for tn := 1; tn <= 5; tn++ {
		if got := oneRun.byTenant[fmt.Sprint(tn)]; got["a"] != 1 || got["b"] != 2 {
			t.Errorf("one process: tenant %d got %v, want a:1 b:2", tn, got)
		}
	}
	if fmt.Sprint(twoRun.byTenant) != fmt.Sprint(oneRun.byTenant) {
		t.Errorf("requests per tenant: %v with 2 workers, %v in one process", twoRun.byTenant, oneRun.byTenant)
	}

	one, err := result.Read(filepath.Join(dir, "one.json"))
	if err != nil {
		t.Fatal(err)
	}
	two, err := result.Read(filepath.Join(dir, "many.json"))
	if err != nil {
		t.Fatal(err)
	}
	if one.Totals.Requests != 15 || two.Totals.Requests != 15 || two.Totals.Successful != 15 {
		t.Errorf("recorded %d requests in one process, %d (%d ok) merged; want 15", one.Totals.Requests, two.Totals.Requests, two.Totals.Successful)
	}
	if two.Run.Partial {
		t.Errorf("merged result is partial: %s", two.Run.PartialReason)
	}
	var segs int64
	for i := 0; i < 2; i++ {
		seg, err := result.Read(filepath.Join(dir, "many.segments", fmt.Sprintf("seg-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		segs += seg.Totals.Requests
	}
	if segs != 15 {
		t.Errorf("the segments recorded %d requests together, want 15", segs)
	}
}
