// Package e2e runs the real stampede binary against real servers on
// 127.0.0.1 that the tests start in-process, and checks what it prints, the
// exit code and the result file.
//
// The binary is built once in TestMain. Set STAMPEDE_E2E_RACE=1 to build it
// with the race detector (much slower; raise -timeout).
package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e")) }

// stepOf returns the step of the given scenario and name (name "" matches
// the scenario's only step).
func stepOf(t *testing.T, res *result.Result, scenario, name string) result.Step {
	t.Helper()
	for _, s := range res.Steps {
		if s.Scenario == scenario && (name == "" || s.Name == name) {
			return s
		}
	}
	var have []string
	for _, s := range res.Steps {
		have = append(have, s.Scenario+"/"+s.Name)
	}
	t.Fatalf("no step %s/%s in the result; have %v", scenario, name, have)
	return result.Step{}
}

// checkSums checks what holds for every complete result: failures by class
// sum to failed, and successful + failed = requests, in the totals and in
// every step, and the steps sum to the totals.
func checkSums(t *testing.T, res *result.Result) {
	t.Helper()
	check := func(what string, req, ok, failed int64, by map[string]int64) {
		var sum int64
		for _, n := range by {
			sum += n
		}
		if sum != failed {
			t.Errorf("%s: by_class sums to %d, failed = %d (%v)", what, sum, failed, by)
		}
		if ok+failed != req {
			t.Errorf("%s: successful %d + failed %d != requests %d", what, ok, failed, req)
		}
	}
	tt := res.Totals
	check("totals", tt.Requests, tt.Successful, tt.Failed, tt.ByClass)
	var req, ok, failed int64
	for _, s := range res.Steps {
		check("step "+s.Scenario+"/"+s.Name, s.Requests, s.Successful, s.Failed, s.ByClass)
		req += s.Requests
		ok += s.Successful
		failed += s.Failed
	}
	if req != tt.Requests || ok != tt.Successful || failed != tt.Failed {
		t.Errorf("steps sum to requests/ok/failed %d/%d/%d, totals say %d/%d/%d", req, ok, failed, tt.Requests, tt.Successful, tt.Failed)
	}
	if !res.Run.Partial {
		checkSeries(t, res)
	}
}

// checkSeries checks that the per-interval series of a complete result add
// up to its totals: every request lands in exactly one interval.
func checkSeries(t *testing.T, res *result.Result) {
	t.Helper()
	s := res.Series
	n := len(s.T)
	if n == 0 {
		t.Errorf("series: no intervals")
		return
	}
	lens := map[string]int{"started": len(s.Started), "completed": len(s.Completed), "ok": len(s.OK),
		"p50_us": len(s.P50US), "p95_us": len(s.P95US), "p99_us": len(s.P99US), "active": len(s.Active),
		"in_flight": len(s.InFlight), "dropped": len(s.Dropped), "lag_p99_us": len(s.LagP99US), "target": len(s.Target)}
	for c, col := range s.Failed {
		lens["failed."+c] = len(col)
	}
	for name, l := range lens {
		if l != n {
			t.Errorf("series: %s has %d values, t has %d", name, l, n)
		}
	}
	sum := func(v []int64) (x int64) {
		for _, e := range v {
			x += e
		}
		return x
	}
	tt := res.Totals
	if got := sum(s.OK); got != tt.Successful {
		t.Errorf("series: ok sums to %d, totals.successful = %d", got, tt.Successful)
	}
	for c, want := range tt.ByClass {
		if got := sum(s.Failed[c]); got != want {
			t.Errorf("series: failed.%s sums to %d, totals.by_class = %d", c, got, want)
		}
	}
	for c, col := range s.Failed {
		if got := sum(col); got != tt.ByClass[c] {
			t.Errorf("series: failed.%s sums to %d, totals.by_class = %d", c, got, tt.ByClass[c])
		}
	}
	if got := sum(s.Dropped); got != tt.ByClass["dropped"] {
		t.Errorf("series: dropped sums to %d, totals.by_class.dropped = %d", got, tt.ByClass["dropped"])
	}
	unfinished := tt.ByClass["dropped"] + tt.ByClass["interrupted"]
	if got := sum(s.Completed); got != tt.Requests-unfinished {
		t.Errorf("series: completed sums to %d, want requests %d − dropped/interrupted %d", got, tt.Requests, unfinished)
	}
}

// summaryInt reads "Label: N" from a text summary.
func summaryInt(t *testing.T, text, label string) int64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(label) + `\s+(\d+)`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("summary has no %q line:\n%s", label, text)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// ---------------------------------------------------------------------------
// Servers. Every one listens on 127.0.0.1 only and is closed in t.Cleanup.

// counter counts requests by key.
type counter struct {
	mu sync.Mutex
	m  map[string]*atomic.Int64
}

func newCounter(keys ...string) *counter {
	c := &counter{m: map[string]*atomic.Int64{}}
	for _, k := range keys {
		c.m[k] = new(atomic.Int64)
	}
	return c
}

func (c *counter) add(key string) {
	c.mu.Lock()
	n, ok := c.m[key]
	if !ok {
		n = new(atomic.Int64)
		c.m[key] = n
	}
	c.mu.Unlock()
	n.Add(1)
}

func (c *counter) get(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.m[key]; ok {
		return n.Load()
	}
	return 0
}

// httpServer starts h on a loopback port; it is closed when the test ends.
func httpServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// statusServer answers by path: /ok 200, /limited 429, /unavailable 503,
// /missing 404, anything else 200; it counts requests by path.
func statusServer(t *testing.T) (*httptest.Server, *counter) {
	srv, c := statusServerNoCleanup()
	t.Cleanup(srv.Close)
	return srv, c
}

// statusServerNoCleanup is statusServer for a caller that closes it.
func statusServerNoCleanup() (*httptest.Server, *counter) {
	c := newCounter("/ok", "/limited", "/unavailable", "/missing")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.URL.Path)
		code := http.StatusOK
		switch r.URL.Path {
		case "/limited":
			code = http.StatusTooManyRequests
		case "/unavailable":
			code = http.StatusServiceUnavailable
		case "/missing":
			code = http.StatusNotFound
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		fmt.Fprintln(w, http.StatusText(code))
	}))
	return srv, c
}

// hangServer holds every request until the client goes away, the test
// ends, or 10s pass. It counts the requests it saw.
func hangServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		tm := time.NewTimer(10 * time.Second)
		defer tm.Stop()
		select {
		case <-r.Context().Done():
		case <-release:
		case <-tm.C:
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv, &seen
}

// resetServer accepts connections, reads one request head and then resets
// the connection (SO_LINGER 0). It counts the heads it read.
func resetServer(t *testing.T) (addr string, seen *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen = new(atomic.Int64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by cleanup
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				tc := c.(*net.TCPConn)
				defer tc.Close()
				tc.SetReadDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(tc)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" || line == "\n" {
						break
					}
				}
				seen.Add(1)
				tc.SetLinger(0)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), seen
}

// stallServer answers "ok" at once except in the last `stall` of every
// `period` (counted from its start): a request arriving then is held until
// the stall ends. See /work/shared/bench/targets/stall.
func stallServer(t *testing.T, period, stall time.Duration) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	var t0 time.Time
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		phase := time.Since(t0) % period
		if phase >= period-stall {
			time.Sleep(period - phase)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok"))
	}))
	t0 = time.Now()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &seen
}
