package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// waveVisit is one user as the target saw it: every user sends exactly
// one request (then thinks past the end of the run).
type waveVisit struct {
	vu, tenant, scenario string
}

func waveServer(t *testing.T) (*httptest.Server, func() []waveVisit) {
	t.Helper()
	var mu sync.Mutex
	var seen []waveVisit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, waveVisit{r.Header.Get("X-VU"), r.Header.Get("X-Tenant"), strings.Trim(r.URL.Path, "/")})
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	take := func() []waveVisit {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
		return out
	}
	return srv, take
}

// oneRequestPerUserPlan is a plan whose every user sends one request
// (scenario a: 1 per tenant, b: 2 per tenant, headers naming the user and
// its tenant) and then thinks past the end, so what the target sees is the
// set of users that ever started, whatever the timing.
func oneRequestPerUserPlan(t *testing.T, url, tenants, stages string) *plan.Plan {
	t.Helper()
	return mustPlan(t, `
target: `+url+`
tenants: `+tenants+`
scenarios:
  a:
    per_tenant: 1
    steps:
      - {get: /a, headers: {X-VU: "{{ vu }}", X-Tenant: "{{ tenant }}"}}
      - think: 1m
  b:
    per_tenant: 2
    steps:
      - {get: /b, headers: {X-VU: "{{ vu }}", X-Tenant: "{{ tenant }}"}}
      - think: 1m
load:
  grace: 1s
  stages:
`+stages)
}

// runSegments runs p split n ways at once, as n processes would.
func runSegments(t *testing.T, p *plan.Plan, n int) []*result.Result {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	out := make([]*result.Result, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = Run(context.Background(), p, Options{Segment: Segment{Index: i, Count: n}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("segment %d/%d: %v", i, n, err)
		}
	}
	return out
}

// Two waves of 3 and 2 tenants, 3 users per tenant (1 of a, 2 of b), each
// ramping up and holding; every user sends one request and then thinks for
// longer than the run, so what the target sees is the set of users. Split
// into 3 segments it must be the same users — ids, tenants and scenarios —
// as one process, and each tenant exactly its per_tenant users.
func TestWavesSplitIntoSegmentsRunTheSameUsers(t *testing.T) {
	srv, take := waveServer(t)
	p := oneRequestPerUserPlan(t, srv.URL, "{count: 5, waves: [{share: 0.6, offset: 0s}, {share: 0.4, offset: 300ms}]}",
		"    - {duration: 500ms, users: 0 -> 1}\n    - {duration: 2s, users: 1}\n")
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	one := take()
	if len(one) != 15 {
		t.Fatalf("one process: the target saw %d users, want 15 (5 tenants × 3): %v", len(one), one)
	}
	perTenant := map[string]map[string]int{}
	ids := map[string]bool{}
	for _, v := range one {
		if ids[v.vu] {
			t.Errorf("one process: user %s sent twice", v.vu)
		}
		ids[v.vu] = true
		if perTenant[v.tenant] == nil {
			perTenant[v.tenant] = map[string]int{}
		}
		perTenant[v.tenant][v.scenario]++
	}
	for tn := 1; tn <= 5; tn++ {
		if got := perTenant[fmt.Sprint(tn)]; got["a"] != 1 || got["b"] != 2 {
			t.Errorf("one process: tenant %d has users %v, want a:1 b:2", tn, got)
		}
	}

	const n = 3
	runSegments(t, p, n)
	split := take()
	if fmt.Sprint(split) != fmt.Sprint(one) {
		t.Errorf("%d segments ran other users than one process:\nsegments %v\none      %v", n, split, one)
	}
}
