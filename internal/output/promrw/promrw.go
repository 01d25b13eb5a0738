// Package promrw streams a run to a Prometheus remote-write receiver
// (Prometheus with --web.enable-remote-write-receiver, Mimir, Thanos,
// VictoriaMetrics, Grafana Cloud): remote write 1.0, protobuf from the
// Prometheus project's own prompb, snappy-compressed.
package promrw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/value"
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
	opts  Options

	// mu guards what the snapshots so far have written: each series once
	// (for its stale marker at the end) and the last snapshot's time.
	mu      sync.Mutex
	written map[string][]prompb.Label
	last    time.Time
	// zeros are the 0 samples (their milliseconds) of the counters whose
	// first figures no receiver has stored yet: the worker adds them to
	// each batch it sends until one is stored, so a first batch lost
	// (dropped from a full queue, refused, the receiver not up yet) does
	// not take the counter's start with it.
	zeros map[string]int64
}

// Options are what a remote-write sink adds to every push: the run's
// labels and the receiver's authorization.
type Options struct {
	Run points.Run
	// BearerToken, when set, is sent as Authorization: Bearer; it cannot
	// be combined with user:password in the URL.
	BearerToken string
	// Header is added to every request (X-Scope-OrgID for Mimir, a
	// gateway's API key).
	Header http.Header
}

// QueueLen is how many snapshots wait for a receiver that is slow or down
// (one a second: two minutes' worth).
const QueueLen = 120

// New makes a sink that posts to rawURL (e.g.
// http://127.0.0.1:9090/api/v1/write).
func New(name, rawURL string, o Options) (*Sink, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not shown: it may hold a password, and the caller
		// names the output as the user wrote it.
		return nil, errors.New("bad prometheus-rw URL: expected http(s)://host:port/api/v1/write")
	}
	if o.BearerToken != "" && u.User != nil {
		return nil, errors.New("a bearer token and user:password in the URL: give one of the two")
	}
	if o.BearerToken != "" && o.Header.Get("Authorization") != "" {
		return nil, errors.New("a bearer token and an Authorization header: give one of the two")
	}
	s := &Sink{name: name, url: rawURL, client: &http.Client{}, now: time.Now, flush: 10 * time.Second,
		opts: o, written: map[string][]prompb.Label{}, zeros: map[string]int64{}}
	s.q = push.New(QueueLen, 5*time.Second, s.send)
	return s, nil
}

// Name implements output.Sink.
func (s *Sink) Name() string { return s.name }

// Sample implements output.Sink: the snapshot is encoded here, on the
// pump's goroutine, and queued for the worker.
func (s *Sink) Sample(r *result.Result) {
	s.sample(r, false)
}

// sample queues a snapshot, stamped with the end of its last interval:
// with --workers a snapshot is the merge of checkpoints seconds old, and
// stamped with the push time its counts would show up late, then again
// unchanged each second until the next checkpoint. A snapshot that brings
// no new interval is skipped; the final figures always go, at the end.
func (s *Sink) sample(r *result.Result, final bool) {
	if r == nil {
		return
	}
	at := s.now()
	if end, ok := intervalEnd(r); ok && end.Before(at) && !final {
		at = end
	}
	s.mu.Lock()
	if !final && !s.last.IsZero() && at.UnixMilli() <= s.last.UnixMilli() {
		s.mu.Unlock()
		return
	}
	wr := s.request(points.From(r, at, s.opts.Run))
	s.mu.Unlock()
	s.q.Offer(wr)
}

// intervalEnd is when a snapshot's last interval ended.
func intervalEnd(r *result.Result) (time.Time, bool) {
	sr := r.Series
	if len(sr.T) == 0 || sr.IntervalS <= 0 || r.Run.Started.IsZero() {
		return time.Time{}, false
	}
	return r.Run.Started.Add(time.Duration((sr.T[len(sr.T)-1] + sr.IntervalS) * float64(time.Second))), true
}

// request is the WriteRequest of one snapshot. A counter's first sample
// goes with a 0 at the snapshot before (the run's start for the first),
// added when the batch is sent (withZeros):
// rate() and increase() need two samples, and a counter whose first
// sample already held seconds of counts (5 s of them where --workers
// streams the workers' checkpoints) would have them left out.
func (s *Sink) request(b points.Batch) *prompb.WriteRequest {
	b.Time = s.after(b.Time)
	wr := writeRequest(b)
	zeroAt := b.Start
	if !s.last.IsZero() {
		zeroAt = s.last
	}
	for _, ts := range wr.Timeseries {
		key := seriesKey(ts.Labels)
		if _, seen := s.written[key]; seen {
			continue
		}
		s.written[key] = ts.Labels
		if counterName(ts.Labels) && zeroAt.UnixMilli() < b.Time.UnixMilli() {
			s.zeros[key] = zeroAt.UnixMilli()
		}
	}
	if b.Time.After(s.last) {
		s.last = b.Time
	}
	return wr
}

// Close implements output.Sink: the final figures are queued last, then
// a stale marker for every series written, so the run's gauges end with
// it (not five minutes later, as Prometheus's lookback would keep them),
// and the queue is given a few seconds to drain.
func (s *Sink) Close(final *result.Result) error {
	if final != nil {
		s.sample(final, true)
	}
	if wr := s.staleMarkers(); wr != nil {
		s.q.Offer(wr)
	}
	_, err := s.q.Close(s.flush)
	return err
}

// staleMarkers are Prometheus's StaleNaN for every series written, just
// after the last sample.
func (s *Sink) staleMarkers() *prompb.WriteRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.written) == 0 {
		return nil
	}
	at := s.after(s.now())
	stale := math.Float64frombits(value.StaleNaN)
	keys := make([]string, 0, len(s.written))
	for k := range s.written {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wr := &prompb.WriteRequest{}
	for _, k := range keys {
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: s.written[k],
			Samples: []prompb.Sample{{Value: stale, Timestamp: at.UnixMilli()}}})
	}
	return wr
}

// after is at, or the millisecond after the last one sent when at is not
// later: samples go out in milliseconds, and a second sample in the same
// millisecond (a final figure or a stale marker just after the last
// tick) makes Prometheus refuse the whole batch as a duplicate.
func (s *Sink) after(at time.Time) time.Time {
	if !s.last.IsZero() && at.UnixMilli() <= s.last.UnixMilli() {
		return time.UnixMilli(s.last.UnixMilli() + 1)
	}
	return at
}

func seriesKey(ls []prompb.Label) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// counterName says whether a series only grows from 0 during the run: a
// counter, or a histogram's buckets, sum and count.
func counterName(ls []prompb.Label) bool {
	for _, l := range ls {
		if l.Name == "__name__" {
			return strings.HasSuffix(l.Value, "_total") || l.Value == points.Duration.Prom+"_bucket" ||
				l.Value == points.Duration.Prom+"_sum" || l.Value == points.Duration.Prom+"_count"
		}
	}
	return false
}

// withZeros is wr with the 0 samples no receiver has stored yet, and
// their series.
func (s *Sink) withZeros(wr *prompb.WriteRequest) (*prompb.WriteRequest, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := *wr
	out.Timeseries = make([]prompb.TimeSeries, len(wr.Timeseries))
	var keys []string
	for i, ts := range wr.Timeseries {
		out.Timeseries[i] = ts
		key := seriesKey(ts.Labels)
		at, ok := s.zeros[key]
		if !ok || len(ts.Samples) == 0 || ts.Samples[0].Timestamp <= at {
			continue
		}
		out.Timeseries[i].Samples = append([]prompb.Sample{{Value: 0, Timestamp: at}}, ts.Samples...)
		keys = append(keys, key)
	}
	return &out, keys
}

// zerosDone ends the resending of these zeros: a receiver stored them,
// or may have (a zero resent behind a stored sample would be out of
// order, and make every later batch refused).
func (s *Sink) zerosDone(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.zeros, k)
	}
}

func (s *Sink) send(ctx context.Context, b any) error {
	wr, zeros := s.withZeros(b.(*prompb.WriteRequest))
	body, err := encode(wr)
	if err != nil {
		return push.Permanent{Err: err}
	}
	err = s.post(ctx, body)
	var dial *net.OpError
	var status statusError
	switch {
	case err == nil:
		s.zerosDone(zeros)
	case errors.As(err, &status) && status.retry, errors.As(err, &dial) && dial.Op == "dial":
		// Not stored: the receiver said so, or was not reached; the
		// zeros go again, with this batch or the next.
	default:
		s.zerosDone(zeros)
	}
	return err
}

// statusError is a receiver's refusal; retry: worth another try (5xx,
// 429), which Prometheus answers with nothing stored.
type statusError struct {
	msg   string
	retry bool
}

func (e statusError) Error() string { return e.msg }

func (s *Sink) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return push.Permanent{Err: err}
	}
	for name, vs := range s.opts.Header {
		for _, v := range vs {
			req.Header.Add(name, v)
		}
	}
	if s.opts.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.opts.BearerToken)
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
	text := push.Redact(fmt.Errorf("%s answered %s: %s", redacted(s.url), resp.Status, bytes.TrimSpace(msg)), s.secrets()).Error()
	// As Prometheus' own sender: 5xx and 429 are worth a retry, other
	// refusals are about the batch and would be refused again.
	if resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests {
		return statusError{msg: text, retry: true}
	}
	return push.Permanent{Err: statusError{msg: text}}
}

// secrets are what an echoing receiver could put in its answer: the
// token, the header values, the URL's password.
func (s *Sink) secrets() []string {
	out := []string{s.opts.BearerToken}
	for _, vs := range s.opts.Header {
		out = append(out, vs...)
	}
	if u, err := url.Parse(s.url); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		out = append(out, pw, u.User.String())
	}
	return out
}

// redacted is a URL with its password, if any, as xxxxx.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

func encode(wr *prompb.WriteRequest) ([]byte, error) {
	if wr == nil {
		return nil, nil
	}
	raw, err := wr.Marshal()
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, raw), nil
}

// writeRequest is the WriteRequest of a batch, one sample a series: classic
// histograms (_bucket with le, _sum, _count) so any receiver takes them.
func writeRequest(b points.Batch) *prompb.WriteRequest {
	ts := b.Time.UnixMilli()
	wr := &prompb.WriteRequest{}
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
	wr.Metadata = metadata()
	return wr
}

func metadata() []prompb.MetricMetadata {
	var md []prompb.MetricMetadata
	for _, m := range points.All {
		t := prompb.MetricMetadata_GAUGE
		switch m.Kind {
		case points.Counter:
			t = prompb.MetricMetadata_COUNTER
		case points.Histogram:
			t = prompb.MetricMetadata_HISTOGRAM
		}
		md = append(md, prompb.MetricMetadata{Type: t, MetricFamilyName: m.Prom, Help: m.Help})
	}
	return md
}
