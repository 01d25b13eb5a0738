package run

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

func mustPlan(t *testing.T, src string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("test.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func checkInvariants(t *testing.T, res *result.Result) {
	t.Helper()
	if err := res.Check(); err != nil {
		t.Fatalf("result invariants: %v", err)
	}
}

// Paced users are scheduled, not goroutines; each must still send one
// iteration per pace, spread over the period, with every request counted.
func TestPacedUsersSendOnSchedule(t *testing.T) {
	srv, seen := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {pace: 200ms, grace: 1s, stages: [{duration: 1s, users: 10}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	// 10 users × 1 s / 200 ms = 50 iterations; users start within the
	// first pace period, so each sends 5 (its last may fall just outside).
	if got := res.Totals.Requests; got < 40 || got > 50 {
		t.Errorf("requests = %d, want 40..50", got)
	}
	if res.Totals.Requests != seen.Load() {
		t.Errorf("result counts %d requests, server saw %d", res.Totals.Requests, seen.Load())
	}
	if res.Run.LatencyFrom != "intended" {
		t.Errorf("paced latency_from = %q, want intended", res.Run.LatencyFrom)
	}
}

// Users with think time over a ramp down: retired users leave after their
// iteration, the run ends on time, and nothing is lost or double counted.
func TestThinkingUsersRampDown(t *testing.T) {
	srv, seen := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - get: /a
      - think: 20ms..40ms
      - get: /b
load: {grace: 1s, stages: [{duration: 600ms, users: 8}, {duration: 600ms, users: 8 -> 0}]}
`)
	start := time.Now()
	res, err := Run(context.Background(), p, Options{Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("run took %v for 1.2 s of stages", el)
	}
	checkInvariants(t, res)
	if res.Totals.Requests != seen.Load() || res.Totals.Failed != 0 {
		t.Errorf("requests %d (failed %d), server saw %d", res.Totals.Requests, res.Totals.Failed, seen.Load())
	}
	a, _ := res.Step("GET /a")
	b, _ := res.Step("GET /b")
	// An iteration abandoned while thinking sent /a but not /b.
	if a == nil || b == nil || b.Requests > a.Requests || a.Requests-b.Requests > 8 {
		t.Errorf("GET /a %v, GET /b %v", a, b)
	}
	if n := len(res.Series.Active); n == 0 || res.Series.Active[n-1] > 2 {
		t.Errorf("active users at the end = %v, want the ramp down to ~0", res.Series.Active)
	}
}

// HTTPS goes through net/http with HTTP/2 negotiated by ALPN, trusting the
// plan's CA file.
func TestHTTPSNegotiatesHTTP2(t *testing.T) {
	var h2 atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		}
		io.WriteString(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {grace: 1s, stages: [{duration: 500ms, users: 2}]}
`)
	res, err := Run(context.Background(), p, Options{TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Totals.Requests == 0 || res.Totals.Failed != 0 {
		t.Fatalf("requests %d failed %d: %+v", res.Totals.Requests, res.Totals.Failed, res.Samples)
	}
	if h2.Load() != res.Totals.Requests {
		t.Errorf("%d of %d requests used HTTP/2", h2.Load(), res.Totals.Requests)
	}
}

// In the open model an arrival that finds every slot busy is dropped and
// counted; it is never silently skipped.
func TestOpenModelCountsDropped(t *testing.T) {
	srv, seen := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "slow")
	})
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {max_in_flight: 2, grace: 2s, stages: [{duration: 1s, rate: 20/s}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Totals.Requests != 20 {
		t.Errorf("arrivals = %d, want exactly 20", res.Totals.Requests)
	}
	dropped := res.Totals.ByClass["dropped"]
	if dropped == 0 || res.Totals.Successful+dropped != 20 || res.Totals.Successful != seen.Load() {
		t.Errorf("ok %d dropped %d server %d", res.Totals.Successful, dropped, seen.Load())
	}
}
