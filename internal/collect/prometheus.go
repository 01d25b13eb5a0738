package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// maxPromSeries bounds what one scrape may add: a node exporter exposes
// thousands of series, and keeping them all every second would swamp the
// result. Past it the rest are dropped and a problem says to use select.
const maxPromSeries = 500

// maxScrapeBytes bounds one response body.
const maxScrapeBytes = 32 << 20

type promCollector struct {
	spec   Spec
	sels   []selector
	client *http.Client
	warned bool
}

func newPromCollector(sp Spec) *promCollector {
	c := &promCollector{spec: sp, client: &http.Client{Transport: &http.Transport{
		MaxIdleConns:      1,
		DisableKeepAlives: false,
	}}}
	for _, s := range sp.Select {
		sel, _ := parseSelector(s) // Validate already checked
		c.sels = append(c.sels, sel)
	}
	return c
}

func (c *promCollector) open(ctx context.Context) error {
	fams, err := c.scrape(ctx)
	if err != nil {
		return err
	}
	if len(c.sels) > 0 && len(flatten(fams, c.sels)) == 0 {
		return fmt.Errorf("no metric matches select %q", c.spec.Select)
	}
	return nil
}

func (c *promCollector) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.spec.Target, nil)
	if err != nil {
		return nil, err
	}
	// Ask for the text format: every exporter speaks it, and expfmt's
	// decoder picks the parser from the reply's Content-Type either way.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("scrape answered %s", resp.Status)
	}
	dec := expfmt.NewDecoder(io.LimitReader(resp.Body, maxScrapeBytes), expfmt.ResponseFormat(resp.Header))
	fams := make(map[string]*dto.MetricFamily)
	for {
		mf := new(dto.MetricFamily)
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("parse metrics: %w", err)
		}
		fams[mf.GetName()] = mf
	}
	return fams, nil
}

func (c *promCollector) sample(ctx context.Context, e *emitter) error {
	fams, err := c.scrape(ctx)
	if err != nil {
		return err
	}
	samples := flatten(fams, c.sels)
	if len(samples) > maxPromSeries {
		dropped := len(samples) - maxPromSeries
		samples = samples[:maxPromSeries]
		if !c.warned {
			c.warned = true
			e.warn(fmt.Sprintf("%d series past the first %d are not recorded; narrow them with select", dropped, maxPromSeries))
		}
	}
	for _, s := range samples {
		if s.counter {
			e.rate(s.key, "1/s", s.v, 1)
		} else {
			e.gauge(s.key, "", s.v)
		}
	}
	return nil
}

func (c *promCollector) close() { c.client.CloseIdleConnections() }

// promSample is one flattened series of a scrape.
type promSample struct {
	key     string // name{label="v",...}, labels sorted
	name    string
	labels  map[string]string
	v       float64
	counter bool
}

// flatten turns families into series, keeping those a selector matches
// (all, when there are none). Counters stay counters (the recorder makes
// rates of them); a histogram or summary contributes its _sum and _count as
// counters and a summary its quantiles as gauges — buckets only when a
// selector asks for NAME_bucket by name, since they multiply the series.
func flatten(fams map[string]*dto.MetricFamily, sels []selector) []promSample {
	var out []promSample
	add := func(name string, labels map[string]string, v float64, counter bool) {
		if math.IsNaN(v) {
			return
		}
		if !matchAny(sels, name, labels, strings.HasSuffix(name, "_bucket")) {
			return
		}
		out = append(out, promSample{key: seriesKey(name, labels), name: name, labels: labels, v: v, counter: counter})
	}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			lbl := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				lbl[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(name, lbl, m.GetCounter().GetValue(), true)
			case dto.MetricType_GAUGE:
				add(name, lbl, m.GetGauge().GetValue(), false)
			case dto.MetricType_UNTYPED:
				add(name, lbl, m.GetUntyped().GetValue(), false)
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				add(name+"_sum", lbl, s.GetSampleSum(), true)
				add(name+"_count", lbl, float64(s.GetSampleCount()), true)
				for _, q := range s.GetQuantile() {
					add(name, withLabel(lbl, "quantile", formatFloat(q.GetQuantile())), q.GetValue(), false)
				}
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				add(name+"_sum", lbl, h.GetSampleSum(), true)
				add(name+"_count", lbl, float64(h.GetSampleCount()), true)
				for _, b := range h.GetBucket() {
					add(name+"_bucket", withLabel(lbl, "le", formatFloat(b.GetUpperBound())), float64(b.GetCumulativeCount()), true)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func withLabel(l map[string]string, k, v string) map[string]string {
	m := make(map[string]string, len(l)+1)
	for a, b := range l {
		m[a] = b
	}
	m[k] = v
	return m
}

func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// seriesKey writes name{a="1",b="2"} with labels sorted, the way people
// write them in select and thresholds.
func seriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// selector is a PromQL-style instant selector without functions:
// name{label="v",label!="v",label=~"re",label!~"re"}.
type selector struct {
	name     string
	matchers []matcher
}

type matcher struct {
	label, op, value string
	re               *regexp.Regexp
}

func (m matcher) match(v string) bool {
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	case "=~":
		return m.re.MatchString(v)
	default: // "!~"
		return !m.re.MatchString(v)
	}
}

func matchAny(sels []selector, name string, labels map[string]string, bucket bool) bool {
	if len(sels) == 0 {
		return !bucket
	}
	for _, s := range sels {
		if s.matches(name, labels) && (!bucket || s.name == name) {
			return true
		}
	}
	return false
}

func (s selector) matches(name string, labels map[string]string) bool {
	if s.name != "" && s.name != name {
		return false
	}
	for _, m := range s.matchers {
		v := labels[m.label]
		if m.label == "__name__" {
			v = name
		}
		if !m.match(v) {
			return false
		}
	}
	return true
}

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`)

func parseSelector(s string) (selector, error) {
	var sel selector
	rest := strings.TrimSpace(s)
	if n := metricNameRE.FindString(rest); n != "" {
		sel.name = n
		rest = rest[len(n):]
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		if sel.name == "" {
			return sel, errors.New("empty selector")
		}
		return sel, nil
	}
	if rest[0] != '{' || rest[len(rest)-1] != '}' {
		return sel, errors.New(`expected a metric name, then optionally {label="value", ...}`)
	}
	body := strings.TrimSpace(rest[1 : len(rest)-1])
	for body != "" {
		ln := labelNameRE.FindString(body)
		if ln == "" {
			return sel, fmt.Errorf("expected a label name at %q", body)
		}
		body = strings.TrimSpace(body[len(ln):])
		var op string
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(body, o) {
				op = o
				break
			}
		}
		if op == "" {
			return sel, fmt.Errorf("expected =, !=, =~ or !~ after %s", ln)
		}
		body = strings.TrimSpace(body[len(op):])
		if body == "" || body[0] != '"' {
			return sel, fmt.Errorf("expected a double-quoted value for %s", ln)
		}
		qv, err := strconv.QuotedPrefix(body)
		if err != nil {
			return sel, fmt.Errorf("bad quoted value for %s: %v", ln, err)
		}
		v, _ := strconv.Unquote(qv)
		body = strings.TrimSpace(body[len(qv):])
		m := matcher{label: ln, op: op, value: v}
		if op == "=~" || op == "!~" {
			// Anchored, as in PromQL.
			re, err := regexp.Compile("^(?:" + v + ")$")
			if err != nil {
				return sel, fmt.Errorf("bad regexp for %s: %v", ln, err)
			}
			m.re = re
		}
		sel.matchers = append(sel.matchers, m)
		if body == "" {
			break
		}
		if body[0] != ',' {
			return sel, fmt.Errorf("expected , between matchers at %q", body)
		}
		body = strings.TrimSpace(body[1:])
	}
	if sel.name == "" && len(sel.matchers) == 0 {
		return sel, errors.New("empty selector")
	}
	return sel, nil
}
