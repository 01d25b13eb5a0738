package promrw

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/result"
)

// snapshot is a cumulative result as a run's pump hands it over: two
// steps, their latencies in real HDR histograms, a per-second series.
func snapshot(t *testing.T, scale int64) *result.Result {
	t.Helper()
	r := &result.Result{Plan: result.PlanInfo{Name: "vote"}, Run: result.RunInfo{Started: time.Now().Add(-time.Minute)}}
	for i, name := range []string{"GET parties", "POST vote"} {
		h := result.NewHistogram()
		n := 100 * scale * int64(i+1)
		for j := int64(0); j < n; j++ {
			// 1..100 ms: 1% of them at or below 1ms, all at or below 100ms.
			h.RecordValue(1000 + (j%100)*1000)
		}
		st := result.Step{Scenario: "voter", Name: name, Requests: n + 3, Successful: n, Failed: 3,
			ByClass: map[string]int64{"server_error": 2, "timeout": 1}, LatencyOK: result.LatencyOf(h)}
		r.Steps = append(r.Steps, st)
	}
	r.Series = result.Series{IntervalS: 1, T: []float64{0, 1}, Active: []int64{10, 20}, InFlight: []int64{3, 4},
		Dropped: []int64{1, 2}, LagP99US: []int64{100, 2500}, Target: []float64{10, 20}}
	return r
}

// startPrometheus runs Debian's prometheus with its remote-write receiver
// on a loopback port, storing into a temp dir, and returns its base URL.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no prometheus binary on PATH (.ci/services.sh installs Debian's prometheus package)")
		}
		t.Skip("skipping: no prometheus binary on PATH (apt-get install prometheus; .ci/services.sh does)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver")
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("prometheus did not get ready: %v\n%s", err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query asks Prometheus' HTTP API for one instant vector's values at a
// time, by a label's value.
func query(t *testing.T, base, q string, by string, at time.Time) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, out.Error)
	}
	got := map[string]float64{}
	for _, r := range out.Data.Result {
		v, _ := strconv.ParseFloat(r.Value[1].(string), 64)
		got[r.Metric[by]] = v
	}
	return got
}

func TestRemoteWriteIntoPrometheus(t *testing.T) {
	base := startPrometheus(t)
	s, err := New("prometheus-rw="+base+"/api/v1/write", base+"/api/v1/write", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two snapshots a second apart, then the final one: counters grow.
	now := time.Now()
	s.now = func() time.Time { return now.Add(-2 * time.Second) }
	s.Sample(snapshot(t, 1))
	s.now = func() time.Time { return now.Add(-time.Second) }
	s.Sample(snapshot(t, 2))
	s.now = func() time.Time { return now }
	if err := s.Close(snapshot(t, 3)); err != nil {
		t.Fatalf("close: %v", err)
	}

	got := query(t, base, `stampede_requests_total{plan="vote",scenario="voter"}`, "step", now)
	if got["GET parties"] != 303 || got["POST vote"] != 603 {
		t.Errorf("requests as Prometheus has them: %v", got)
	}
	got = query(t, base, `stampede_failures_total{step="POST vote"}`, "class", now)
	if got["server_error"] != 2 || got["timeout"] != 1 {
		t.Errorf("failures by class: %v", got)
	}
	// The histogram is a real one to Prometheus: 1% at or below 1ms,
	// everything at or below 100ms, and a median about 50ms.
	got = query(t, base, `stampede_request_duration_seconds_bucket{step="GET parties"}`, "le", now)
	if got["0.001"] != 3 || got["0.1"] != 300 || got["+Inf"] != 300 {
		t.Errorf("buckets: %v", got)
	}
	got = query(t, base, `histogram_quantile(0.5, stampede_request_duration_seconds_bucket{step="GET parties"})`, "step", now)
	if q := got["GET parties"]; q < 0.025 || q > 0.05 {
		t.Errorf("median from the buckets %v, want within the 25..50ms bucket", q)
	}
	for q, want := range map[string]float64{
		`stampede_active_users`: 20, `stampede_in_flight`: 4, `stampede_dropped_total`: 3,
		`stampede_generator_lag_p99_seconds`: 0.0025, `stampede_target`: 20,
	} {
		if got := query(t, base, q, "plan", now); got["vote"] != want {
			t.Errorf("%s = %v, want %v", q, got, want)
		}
	}
	// Earlier snapshots are there too, at their own times.
	// (Four: the 0 at the run's start before the first.)
	resp, err := http.Get(base + "/api/v1/query?time=" + strconv.FormatInt(now.Unix()+1, 10) + "&query=" + url.QueryEscape(`count_over_time(stampede_requests_total{step="POST vote"}[2m])`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"4"]`) {
		t.Errorf("want 4 samples of the counter: %s", b)
	}
}

// TestReceiverDownCostsNothing: a receiver that never answers, and one
// that is not there at all. Offering never waits; what is lost is counted
// and said once, at the end.
func TestReceiverDownCostsNothing(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	closed := "http://" + hostile.Refused(t) + "/api/v1/write"

	for name, u := range map[string]string{"hanging": hang.URL + "/api/v1/write", "closed": closed} {
		s, err := New("prometheus-rw="+u, u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.flush = time.Second
		base := snapshot(t, 1)
		base.Run.Started = time.Now().Add(-time.Hour)
		const n = QueueLen + 50
		for i := 0; i < n; i++ {
			// Each a new interval, as a run's snapshots are.
			snap := *base
			snap.Series.T = []float64{float64(i)}
			s.Sample(&snap)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errc := make(chan error, 1)
		go func() { errc <- s.Close(nil) }()
		select {
		case err = <-errc:
		case <-ctx.Done():
			t.Fatalf("%s: Close did not return", name)
		}
		cancel()
		// n snapshots and the stale markers after them.
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("of %d batches not delivered", n+1)) {
			t.Errorf("%s: close said %v", name, err)
		}
		// At most the queue and the one in flight were kept; the rest
		// were dropped, oldest first, and counted.
		if !strings.Contains(err.Error(), "dropped while the receiver could not keep up") {
			t.Errorf("%s: no overflow count in %v", name, err)
		}
	}
}
