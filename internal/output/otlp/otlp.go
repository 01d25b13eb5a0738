// Package otlp streams a run to an OpenTelemetry collector (or any OTLP
// receiver) over OTLP/HTTP, with the OpenTelemetry Go SDK's exporter. The
// run's figures are cumulative already, so they are handed to the
// exporter as cumulative data points rather than recorded through
// instruments a second time.
package otlp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/stampede-load/stampede/internal/output/points"
	"github.com/stampede-load/stampede/internal/output/push"
	"github.com/stampede-load/stampede/internal/result"
)

// QueueLen is how many snapshots wait for a receiver that is slow or down.
const QueueLen = 120

// Sink is the OTLP output.
type Sink struct {
	name  string
	exp   *otlpmetrichttp.Exporter
	q     *push.Queue
	res   *resource.Resource
	now   func() time.Time
	flush time.Duration
	run   points.Run
	// secrets are the header values (the token, a password) an error
	// must not show.
	secrets []string
}

// Options are the run's labels and the resource the data points come
// from.
type Options struct {
	Version string
	Run     points.Run
	// ServiceName and ResourceAttributes are OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES, as the OpenTelemetry SDKs read them
	// (key=value,key=value, values percent-encoded); ServiceName wins
	// over a service.name among the attributes, and "stampede" is the
	// name when neither gives one.
	ServiceName, ResourceAttributes string
	// Header is added to every export (an Authorization, a tenant).
	Header http.Header
}

// New makes a sink that exports to rawURL: http(s)://host:4318, to which
// /v1/metrics is added when it has no path, or a full URL.
func New(name, rawURL string, o Options) (*Sink, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not shown: it may hold a password, and the caller
		// names the output as the user wrote it.
		return nil, errors.New("bad otlp URL: expected http(s)://host:4318 or a full URL ending in /v1/metrics")
	}
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/v1/metrics"
	}
	res, err := newResource(o)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{}
	for name := range o.Header {
		headers[name] = o.Header.Get(name)
	}
	if u.User != nil {
		// The exporter drops a URL's user:password: it goes as the
		// header a browser would make of it.
		if o.Header.Get("Authorization") != "" {
			return nil, errors.New("user:password in the URL and an Authorization header or bearer token: give one of the two")
		}
		pw, _ := u.User.Password()
		headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
		u.User = nil
	}
	exp, err := otlpmetrichttp.New(context.Background(),
		otlpmetrichttp.WithEndpointURL(u.String()),
		otlpmetrichttp.WithHeaders(headers),
		otlpmetrichttp.WithTimeout(5*time.Second),
		// The queue retries, and gives up on a batch when its time is
		// up; the exporter's own retry would hold the batch longer.
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
	)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %v", err)
	}
	s := &Sink{name: name, exp: exp, now: time.Now, flush: 10 * time.Second, res: res, run: o.Run}
	for _, v := range headers {
		s.secrets = append(s.secrets, v)
	}
	s.q = push.New(QueueLen, 5*time.Second, s.send)
	return s, nil
}

// Name implements output.Sink.
func (s *Sink) Name() string { return s.name }

// Sample implements output.Sink.
func (s *Sink) Sample(r *result.Result) {
	if r == nil {
		return
	}
	s.q.Offer(s.metrics(points.From(r, s.now(), s.run)))
}

// Close implements output.Sink.
func (s *Sink) Close(final *result.Result) error {
	if final != nil {
		s.Sample(final)
	}
	_, err := s.q.Close(s.flush)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.exp.Shutdown(ctx)
	return err
}

func (s *Sink) send(ctx context.Context, b any) error {
	return push.Redact(s.exp.Export(ctx, b.(*metricdata.ResourceMetrics)), s.secrets)
}

// newResource is the resource of every export: stampede and its version,
// then the user's attributes, then the user's service name.
func newResource(o Options) (*resource.Resource, error) {
	kv := []attribute.KeyValue{semconv.ServiceName("stampede"), semconv.ServiceVersion(o.Version)}
	for _, pair := range strings.Split(o.ResourceAttributes, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value", pair)
		}
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q: %v", pair, err)
		}
		kv = append(kv, attribute.String(k, value))
	}
	if o.ServiceName != "" {
		kv = append(kv, semconv.ServiceName(o.ServiceName))
	}
	// The set keeps the last value of a key: the user's over stampede's.
	return resource.NewSchemaless(kv...), nil
}

func attrs(ls []points.Label) attribute.Set {
	kv := make([]attribute.KeyValue, len(ls))
	for i, l := range ls {
		kv[i] = attribute.String(l.Name, l.Value)
	}
	return attribute.NewSet(kv...)
}

// metrics converts a batch to the SDK's data model, one metric per name.
func (s *Sink) metrics(b points.Batch) *metricdata.ResourceMetrics {
	byName := map[string]*metricdata.Metrics{}
	var order []*metricdata.Metrics
	for _, p := range b.Points {
		m := p.Metric
		md := byName[m.OTel]
		if md == nil {
			md = &metricdata.Metrics{Name: m.OTel, Description: m.Help, Unit: m.Unit}
			switch m.Kind {
			case points.Counter:
				md.Data = metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
			case points.Gauge:
				md.Data = metricdata.Gauge[float64]{}
			case points.Histogram:
				md.Data = metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
			}
			byName[m.OTel] = md
			order = append(order, md)
		}
		switch d := md.Data.(type) {
		case metricdata.Sum[float64]:
			d.DataPoints = append(d.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(p.Labels), StartTime: b.Start, Time: b.Time, Value: p.Value})
			md.Data = d
		case metricdata.Gauge[float64]:
			d.DataPoints = append(d.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(p.Labels), Time: b.Time, Value: p.Value})
			md.Data = d
		case metricdata.Histogram[float64]:
			d.DataPoints = append(d.DataPoints, metricdata.HistogramDataPoint[float64]{
				Attributes: attrs(p.Labels), StartTime: b.Start, Time: b.Time,
				Count: p.Count, Sum: p.Sum, Bounds: points.BoundsSec, BucketCounts: p.Counts,
			})
			md.Data = d
		}
	}
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: "github.com/stampede-load/stampede"}}
	for _, md := range order {
		sm.Metrics = append(sm.Metrics, *md)
	}
	return &metricdata.ResourceMetrics{Resource: s.res, ScopeMetrics: []metricdata.ScopeMetrics{sm}}
}
