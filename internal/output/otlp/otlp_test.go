package otlp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/result"
)

func snapshot(t *testing.T, scale int64) *result.Result {
	t.Helper()
	r := &result.Result{Plan: result.PlanInfo{Name: "vote"}, Run: result.RunInfo{Started: time.Now().Add(-time.Minute)}}
	h := result.NewHistogram()
	n := 100 * scale
	for j := int64(0); j < n; j++ {
		h.RecordValue(1000 + (j%100)*1000)
	}
	r.Steps = append(r.Steps, result.Step{Scenario: "voter", Name: "POST vote", Requests: n + 1, Successful: n, Failed: 1,
		ByClass: map[string]int64{"timeout": 1}, LatencyOK: result.LatencyOf(h)})
	r.Series = result.Series{IntervalS: 1, T: []float64{0}, Active: []int64{7}, InFlight: []int64{2}, Dropped: []int64{0}, LagP99US: []int64{10}, Target: []float64{7}}
	return r
}

// receiver decodes what it gets with the collector's own pdata, as an
// OpenTelemetry collector's OTLP/HTTP receiver does.
type receiver struct {
	mu   sync.Mutex
	got  []pmetric.Metrics
	path string
	ct   string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, req.Metrics())
	rc.path, rc.ct = r.URL.Path, r.Header.Get("Content-Type")
	rc.mu.Unlock()
	out, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func TestOTLPDecodedByPdata(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s, err := New("otlp="+srv.URL, srv.URL, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s.Sample(snapshot(t, 1))
	if err := s.Close(snapshot(t, 2)); err != nil {
		t.Fatalf("close: %v", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 2 || rc.path != "/v1/metrics" || rc.ct != "application/x-protobuf" {
		t.Fatalf("%d exports to %s (%s)", len(rc.got), rc.path, rc.ct)
	}
	last := rc.got[1]
	rm := last.ResourceMetrics().At(0)
	if v, ok := rm.Resource().Attributes().Get("service.name"); !ok || v.Str() != "stampede" {
		t.Errorf("service.name %v", v)
	}
	ms := rm.ScopeMetrics().At(0).Metrics()
	seen := map[string]pmetric.Metric{}
	for i := 0; i < ms.Len(); i++ {
		seen[ms.At(i).Name()] = ms.At(i)
	}
	req := seen["stampede.requests"]
	if req.Type() != pmetric.MetricTypeSum || !req.Sum().IsMonotonic() || req.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Fatalf("stampede.requests: %v", req.Type())
	}
	dp := req.Sum().DataPoints().At(0)
	if dp.DoubleValue() != 201 {
		t.Errorf("requests %v, want 201", dp.DoubleValue())
	}
	if v, _ := dp.Attributes().Get("step"); v.Str() != "POST vote" {
		t.Errorf("step attribute %v", v.Str())
	}
	f := seen["stampede.failures"].Sum().DataPoints().At(0)
	if c, _ := f.Attributes().Get("class"); c.Str() != "timeout" || f.DoubleValue() != 1 {
		t.Errorf("failures: %v %v", c.Str(), f.DoubleValue())
	}
	h := seen["stampede.request.duration"]
	if h.Type() != pmetric.MetricTypeHistogram || h.Unit() != "s" {
		t.Fatalf("duration: %v %q", h.Type(), h.Unit())
	}
	hp := h.Histogram().DataPoints().At(0)
	var sum uint64
	for i := 0; i < hp.BucketCounts().Len(); i++ {
		sum += hp.BucketCounts().At(i)
	}
	if hp.Count() != 200 || sum != 200 || hp.ExplicitBounds().Len()+1 != hp.BucketCounts().Len() || hp.BucketCounts().At(0) != 2 {
		t.Errorf("histogram: count %d, buckets sum %d, first bucket %d", hp.Count(), sum, hp.BucketCounts().At(0))
	}
	if g := seen["stampede.active_users"]; g.Type() != pmetric.MetricTypeGauge || g.Gauge().DataPoints().At(0).DoubleValue() != 7 {
		t.Errorf("active users gauge: %v", g.Type())
	}
}

func TestOTLPReceiverDown(t *testing.T) {
	u := "http://" + hostile.Refused(t)
	s, err := New("otlp="+u, u, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s.flush = time.Second
	snap := snapshot(t, 1)
	for i := 0; i < QueueLen+10; i++ {
		s.Sample(snap)
	}
	err = s.Close(nil)
	if err == nil || !strings.Contains(err.Error(), "not delivered") || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("close said %v", err)
	}
}
