package promrw

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/stampede-load/stampede/internal/output/points"
)

// runSink is a sink of one run's segment whose clock the test sets.
func runSink(t *testing.T, base string, run points.Run, now *time.Time) *Sink {
	t.Helper()
	s, err := New("prometheus-rw="+base+"/api/v1/write", base+"/api/v1/write", Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return *now }
	return s
}

// TestStaleMarkersEndEverySeries: once the run is over its series end
// there and then; without stale markers Prometheus's 5 minute lookback
// showed the last active users for minutes after the run.
func TestStaleMarkersEndEverySeries(t *testing.T) {
	base := startPrometheus(t)
	end := time.Now()
	at := end.Add(-time.Second)
	s := runSink(t, base, points.Run{TestID: "stale"}, &at)
	s.Sample(snapshot(t, 1))
	at = end
	if err := s.Close(snapshot(t, 2)); err != nil {
		t.Fatal(err)
	}
	if got := query(t, base, `stampede_active_users{testid="stale"}`, "plan", end); got["vote"] != 20 {
		t.Fatalf("active users at the run's end: %v, want 20", got)
	}
	after := end.Add(10 * time.Second)
	for _, q := range []string{`stampede_active_users`, `stampede_requests_total`, `stampede_request_duration_seconds_bucket`, `stampede_target`} {
		if got := query(t, base, q+`{testid="stale"}`, "step_index", after); len(got) != 0 {
			t.Errorf("%s 10 s after the run: %v, want no series", q, got)
		}
	}
}

// TestCountersCountFromTheFirstSample: a first snapshot 5 s into the run
// (as the --workers coordinator's merge of checkpoints arrives) already
// holds 5 s of requests; increase() over the run must still equal the
// run's total, which it did not when the counter's first sample was that.
func TestCountersCountFromTheFirstSample(t *testing.T) {
	base := startPrometheus(t)
	end := time.Now().Truncate(time.Second)
	r1, r2 := snapshot(t, 5), snapshot(t, 9)
	start := end.Add(-10 * time.Second)
	r1.Run.Started, r2.Run.Started = start, start
	at := start.Add(5 * time.Second)
	s := runSink(t, base, points.Run{TestID: "first"}, &at)
	s.Sample(r1)
	at = end
	if err := s.Close(r2); err != nil {
		t.Fatal(err)
	}
	total := r2.Steps[0].Requests + r2.Steps[1].Requests
	sum := query(t, base, `sum(stampede_requests_total{testid="first"})`, "", end)
	inc := query(t, base, `sum(increase(stampede_requests_total{testid="first"}[11s]))`, "", end)
	if sum[""] != float64(total) || inc[""] != float64(total) {
		t.Errorf("requests: sum %v, increase over the run %v; the run's total %d", sum[""], inc[""], total)
	}
	// The histogram's count starts at 0 too.
	cnt := query(t, base, `sum(increase(stampede_request_duration_seconds_count{testid="first"}[11s]))`, "", end)
	if want := r2.Steps[0].LatencyOK.Count + r2.Steps[1].LatencyOK.Count; cnt[""] != float64(want) {
		t.Errorf("latency count: increase %v, want %d", cnt[""], want)
	}
}

// TestSegmentsKeepTheirOwnSeries: two segments of one run write at once;
// each keeps its own series and the sum over them is the whole run's
// (before, both wrote one series and Prometheus kept either's figure).
func TestSegmentsKeepTheirOwnSeries(t *testing.T) {
	base := startPrometheus(t)
	now := time.Now()
	var wg sync.WaitGroup
	for i, seg := range []string{"0/2", "1/2"} {
		s := runSink(t, base, points.Run{TestID: "segs", Segment: seg, Labels: []points.Label{{Name: "env", Value: "ci"}}}, &now)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Close(snapshot(t, int64(i+1))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := query(t, base, `sum by (segment) (stampede_requests_total{testid="segs",env="ci"})`, "segment", now)
	if got["0/2"] != 306 || got["1/2"] != 606 {
		t.Errorf("requests by segment: %v, want 0/2: 306, 1/2: 606", got)
	}
	if sum := query(t, base, `sum(stampede_requests_total{testid="segs"})`, "", now); sum[""] != 912 {
		t.Errorf("requests summed over the segments: %v, want 912", sum[""])
	}
}

// TestExactPercentilesAsGauges: the quantile gauges are the result's own
// HDR percentiles, to the microsecond.
func TestExactPercentilesAsGauges(t *testing.T) {
	r := snapshot(t, 1)
	b := points.From(r, time.Now(), points.Run{TestID: "q"})
	got := map[string]float64{}
	for _, p := range b.Points {
		if p.Metric != points.Quantile || label(p.Labels, "step") != "GET parties" {
			continue
		}
		got[label(p.Labels, "quantile")] = p.Value
	}
	l := r.Steps[0].LatencyOK
	want := map[string]float64{"0.5": float64(l.P50US) / 1e6, "0.9": float64(l.P90US) / 1e6, "0.95": float64(l.P95US) / 1e6,
		"0.99": float64(l.P99US) / 1e6, "0.999": float64(l.P999US) / 1e6}
	if len(got) != len(want) {
		t.Fatalf("quantiles %v, want %v", got, want)
	}
	for q, v := range want {
		if got[q] != v {
			t.Errorf("quantile %s: %v, want %v", q, got[q], v)
		}
	}
}

// TestBearerTokenAndHeaders: the token and the extra headers reach the
// receiver on every push; the token is never in an error.
func TestBearerTokenAndHeaders(t *testing.T) {
	var mu sync.Mutex
	var auths, orgs []string
	var series int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw, _ := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		auths, orgs, series = append(auths, r.Header.Get("Authorization")), append(orgs, r.Header.Get("X-Scope-OrgID")), series+len(wr.Timeseries)
		mu.Unlock()
		http.Error(w, "quota", http.StatusBadRequest)
	}))
	defer srv.Close()
	s, err := New("rw", srv.URL, Options{BearerToken: "s3cret", Header: http.Header{"X-Scope-Orgid": {"tenant-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Close(snapshot(t, 1))
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 2 || series == 0 {
		t.Fatalf("%d pushes (%d series), want the final figures and the stale markers", len(auths), series)
	}
	for i := range auths {
		if auths[i] != "Bearer s3cret" || orgs[i] != "tenant-1" {
			t.Errorf("push %d: Authorization %q, X-Scope-OrgID %q", i, auths[i], orgs[i])
		}
	}
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("close: %v (want the refusal, without the token)", err)
	}
}

// TestAuthRefusedTwice: a token besides user:password in the URL or an
// Authorization header is one credential too many.
func TestAuthRefusedTwice(t *testing.T) {
	for _, c := range []struct {
		url string
		o   Options
	}{
		{"http://u:p@127.0.0.1:9/api/v1/write", Options{BearerToken: "t"}},
		{"http://127.0.0.1:9/api/v1/write", Options{BearerToken: "t", Header: http.Header{"Authorization": {"Basic x"}}}},
	} {
		if _, err := New("rw", c.url, c.o); err == nil || strings.Contains(err.Error(), ":p@") {
			t.Errorf("%s with %+v: %v, want a refusal", c.url, c.o, err)
		}
	}
}

func label(ls []points.Label, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}
