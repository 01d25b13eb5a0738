package otlp

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/stampede-load/stampede/internal/output/points"
)

// TestPrometheusNamesThroughTheTranslator: a metric exported over OTLP
// and stored in Prometheus (its OTLP receiver, the collector's prometheus
// exporters) is named by Prometheus's own translator; each must come out
// with the name remote write gives it. The target gauge, of unit "1",
// came out as stampede_target_ratio.
func TestPrometheusNamesThroughTheTranslator(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s, err := New("otlp="+srv.URL, srv.URL, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(snapshot(t, 1)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range points.All {
		want[m.OTel] = m.Prom
	}
	namer := otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ms := rc.got[0].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	seen := 0
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i)
		var typ otlptranslator.MetricType = otlptranslator.MetricTypeGauge
		switch m.Type() {
		case pmetric.MetricTypeSum:
			typ = otlptranslator.MetricTypeMonotonicCounter
		case pmetric.MetricTypeHistogram:
			typ = otlptranslator.MetricTypeHistogram
		}
		got, err := namer.Build(otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: typ})
		if err != nil || got != want[m.Name()] {
			t.Errorf("%s (unit %q) is %q in Prometheus (%v), want %q", m.Name(), m.Unit(), got, err, want[m.Name()])
		}
		seen++
	}
	if seen < 8 {
		t.Errorf("%d metrics exported, want every one the snapshot has", seen)
	}
}

// TestResourceFromOTelVariables: OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, as main hands them over, name the resource;
// the service name wins over a service.name among the attributes.
func TestResourceFromOTelVariables(t *testing.T) {
	for _, c := range []struct {
		name, attrs string
		want        map[string]string
	}{
		{"", "", map[string]string{"service.name": "stampede", "service.version": "test"}},
		{"checkout-load", "deployment.environment=staging,team=perf%20eng, service.name=ignored",
			map[string]string{"service.name": "checkout-load", "deployment.environment": "staging", "team": "perf eng"}},
		{"", "service.name=from-attrs", map[string]string{"service.name": "from-attrs"}},
	} {
		rc := &receiver{}
		srv := httptest.NewServer(rc)
		s, err := New("otlp="+srv.URL, srv.URL, Options{Version: "test", ServiceName: c.name, ResourceAttributes: c.attrs,
			Run: points.Run{TestID: "r1", Segment: "all"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(snapshot(t, 1)); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		rm := rc.got[0].ResourceMetrics().At(0)
		got := rm.Resource().Attributes().AsRaw()
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%q %q: resource %s = %v, want %q (all: %v)", c.name, c.attrs, k, got[k], v, got)
			}
		}
		dp := rm.ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0).Attributes().AsRaw()
		if dp["testid"] != "r1" || dp["segment"] != "all" {
			t.Errorf("data point attributes %v, want testid and segment", dp)
		}
	}
	if _, err := New("otlp", "http://127.0.0.1:4318", Options{ResourceAttributes: "novalue"}); err == nil {
		t.Error("a malformed OTEL_RESOURCE_ATTRIBUTES was taken")
	}
}
