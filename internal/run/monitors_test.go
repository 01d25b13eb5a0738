package run

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/plan"
)

func monitorPlan(t *testing.T, src string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("monitors.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deadAddr is a loopback address that refuses connections for the whole
// test (no other test's server can come to listen there).
func deadAddr(t *testing.T) string { return hostile.Refused(t) }

func okServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The plan's monitors run beside the load on its clock: the first samples
// come one interval before the load (t < 0), and the generator's own
// process is always there.
func TestRunRecordsMonitors(t *testing.T) {
	p := monitorPlan(t, `
target: `+okServer(t)+`
scenarios: {s: {steps: [{get: /}]}}
load: {grace: 1s, stages: [{duration: 2s, users: 2}]}
monitors:
  - host
  - redis: `+deadAddr(t)+`
    timeout: 200ms
`)
	var mu sync.Mutex
	var warnings []string
	start := time.Now()
	res, err := Run(context.Background(), p, Options{MonitorWarning: func(m string) {
		mu.Lock()
		warnings = append(warnings, m)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 2900*time.Millisecond {
		t.Errorf("run took %v: the load should start one monitor interval after the first samples", el)
	}
	// A loaded machine (go test -race ./...) may stretch a host sample
	// past its interval, so only the shape is checked, not the count.
	load1 := res.Monitors["host.load1"]
	if len(load1.T) < 2 {
		t.Fatalf("host.load1 missing or short: %+v (keys %v)", load1, monKeys(res.Monitors))
	}
	// The first sample is taken one interval before the load but stamped
	// at the middle of its reading, which a starved machine stretches past
	// t = 0; the monitors' start is checked below instead.
	if last := load1.T[len(load1.T)-1]; last > res.Run.DurationS+3 {
		t.Errorf("last sample at %vs, long after the run (%vs) ended", last, res.Run.DurationS)
	}
	if _, ok := res.Monitors["process[self].rss_bytes"]; !ok {
		t.Errorf("the generator's own process is always recorded; keys %v", monKeys(res.Monitors))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "cannot start redis") {
		t.Errorf("warnings = %q, want one about redis", warnings)
	}
	if len(res.MonitorProblems) == 0 || res.MonitorProblems[0].Monitor != "redis" || res.MonitorProblems[0].Severity != "warn" {
		t.Errorf("monitor_problems = %+v, want the redis warning", res.MonitorProblems)
	}
	// The redis warning is stamped when the monitors started, the first
	// reading of their clock, whose zero (the load's start) is one interval
	// later however slowly the machine runs.
	if len(res.MonitorProblems) > 0 && res.MonitorProblems[0].T >= 0 {
		t.Errorf("monitors started at t = %v, want one interval before the load", res.MonitorProblems[0].T)
	}
	if res.Totals.Requests == 0 {
		t.Error("no requests: the load did not run")
	}
}

// A required monitor that cannot start stops the run before any load.
func TestRequiredMonitorStopsRun(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	p := monitorPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 1}]}
`)
	spec := collect.Spec{Kind: "postgres", Target: "postgres://u:hunter2@" + deadAddr(t) + "/db", Required: true, Timeout: 300 * time.Millisecond}
	_, err := Run(context.Background(), p, Options{Monitors: []collect.Spec{spec}})
	var me *MonitorError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *MonitorError", err)
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "postgres") {
		t.Errorf("error should name the monitor without its password: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests were sent; a required monitor failing must stop the run first", n)
	}
}

func TestCheckMonitors(t *testing.T) {
	p := monitorPlan(t, `
target: http://127.0.0.1:1
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 1}]}
monitors:
  - prometheus: ftp://example/metrics
  - prometheus: http://127.0.0.1:9100/metrics
    name: node
    select: ['node_cpu{mode=idle']
  - redis: 127.0.0.1:6379
`)
	got := CheckMonitors(p)
	if len(got) != 2 || !strings.HasPrefix(got[0], "monitors.yaml:6:5: ") || !strings.Contains(got[0], "not an http(s) URL") ||
		!strings.HasPrefix(got[1], "monitors.yaml:7:5: ") || !strings.Contains(got[1], "select") {
		t.Errorf("CheckMonitors = %q", got)
	}
}

func monKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
