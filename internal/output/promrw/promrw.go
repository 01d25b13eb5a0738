// Package promrw streams a run to a Prometheus remote-write receiver
// (Prometheus with --web.enable-remote-write-receiver, Mimir, Thanos,
// VictoriaMetrics, Grafana Cloud): remote write 1.0, protobuf from the
// Prometheus project's own prompb, snappy-compressed.
package promrw

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/stampede-load/stampede/internal/output/points"
	"github.com/stampede-load/stampede/internal/output/push"
	"github.com/stampede-load/stampede/internal/result"
)

// Sink is the remote-write output.
type Sink struct {
	name   string
	url    string
	client *http.Client
	q      *push.Queue
	now    func() time.Time
	// flush bounds how long Close waits for the queue to drain.
	flush time.Duration
}

// QueueLen is how many snapshots wait for a receiver that is slow or down
// (one a second: two minutes' worth).
const QueueLen = 120

// New makes a sink that posts to rawURL (e.g.
// http://127.0.0.1:9090/api/v1/write).
func New(name, rawURL string) (*Sink, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bad prometheus-rw URL %q: expected http(s)://host:port/api/v1/write", rawURL)
	}
	s := &Sink{name: name, url: rawURL, client: &http.Client{}, now: time.Now, flush: 10 * time.Second}
	s.q = push.New(QueueLen, 5*time.Second, s.send)
	return s, nil
}

// Name implements output.Sink.
func (s *Sink) Name() string { return s.name }

// Sample implements output.Sink: the snapshot is encoded here, on the
// pump's goroutine, and queued for the worker.
func (s *Sink) Sample(r *result.Result) {
	if r == nil {
		return
	}
	body, err := Encode(points.From(r, s.now()))
	if err == nil {
		s.q.Offer(body)
	}
}

// Close implements output.Sink: the final figures are queued last and
// the queue is given a few seconds to drain.
func (s *Sink) Close(final *result.Result) error {
	if final != nil {
		s.Sample(final)
	}
	_, err := s.q.Close(s.flush)
	return err
}

func (s *Sink) send(ctx context.Context, b any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(b.([]byte)))
	if err != nil {
		return push.Permanent{Err: err}
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "stampede")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = fmt.Errorf("%s answered %s: %s", s.url, resp.Status, bytes.TrimSpace(msg))
	// As Prometheus' own sender: 5xx and 429 are worth a retry, other
	// refusals are about the batch and would be refused again.
	if resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests {
		return err
	}
	return push.Permanent{Err: err}
}

// Encode builds the snappy-compressed WriteRequest of a batch: classic
// histograms (_bucket with le, _sum, _count) so any receiver takes them.
func Encode(b points.Batch) ([]byte, error) {
	ts := b.Time.UnixMilli()
	var wr prompb.WriteRequest
	add := func(name string, ls []points.Label, extra []prompb.Label, v float64) {
		labels := make([]prompb.Label, 0, len(ls)+len(extra)+1)
		labels = append(labels, prompb.Label{Name: "__name__", Value: name})
		for _, l := range ls {
			labels = append(labels, prompb.Label{Name: l.Name, Value: l.Value})
		}
		labels = append(labels, extra...)
		// Receivers want labels sorted by name.
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: labels, Samples: []prompb.Sample{{Value: v, Timestamp: ts}}})
	}
	for _, p := range b.Points {
		m := p.Metric
		if m.Kind != points.Histogram {
			add(m.Prom, p.Labels, nil, p.Value)
			continue
		}
		var cum uint64
		for i, c := range p.Counts {
			cum += c
			le := "+Inf"
			if i < len(points.BoundsSec) {
				le = strconv.FormatFloat(points.BoundsSec[i], 'g', -1, 64)
			}
			add(m.Prom+"_bucket", p.Labels, []prompb.Label{{Name: "le", Value: le}}, float64(cum))
		}
		add(m.Prom+"_sum", p.Labels, nil, p.Sum)
		add(m.Prom+"_count", p.Labels, nil, float64(p.Count))
	}
	for _, m := range points.All {
		t := prompb.MetricMetadata_GAUGE
		switch m.Kind {
		case points.Counter:
			t = prompb.MetricMetadata_COUNTER
		case points.Histogram:
			t = prompb.MetricMetadata_HISTOGRAM
		}
		wr.Metadata = append(wr.Metadata, prompb.MetricMetadata{Type: t, MetricFamilyName: m.Prom, Help: m.Help})
	}
	raw, err := wr.Marshal()
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, raw), nil
}
