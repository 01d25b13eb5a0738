package merge

import (
	"fmt"
	"sort"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// mergeLatency merges the inputs' histograms into one of the shared
// geometry; hdr's Merge is exact when geometries match, and recording into
// NewHistogram keeps the output geometry fixed whatever the inputs were.
func (o Options) mergeLatency(rs []*result.Result, what string, pick func(*result.Result) []result.Latency) (result.Latency, error) {
	h := result.NewHistogram()
	for i, r := range rs {
		for _, l := range pick(r) {
			lh, err := l.Histogram()
			if err != nil {
				return result.Latency{}, o.inputErr(i, fmt.Errorf("%s: %w", what, err))
			}
			if dropped := h.Merge(lh); dropped != 0 {
				return result.Latency{}, o.inputErr(i, fmt.Errorf("%s: %d values outside the histogram range", what, dropped))
			}
		}
	}
	return result.LatencyOf(h), nil
}

func (o Options) totals(rs []*result.Result) (result.Totals, error) {
	t := result.Totals{ByClass: map[string]int64{}}
	for _, r := range rs {
		t.Requests += r.Totals.Requests
		t.Successful += r.Totals.Successful
		t.Failed += r.Totals.Failed
		t.Iterations += r.Totals.Iterations
		addClasses(t.ByClass, r.Totals.ByClass)
	}
	var err error
	if t.LatencyOK, err = o.mergeLatency(rs, "totals latency_ok", func(r *result.Result) []result.Latency {
		return []result.Latency{r.Totals.LatencyOK}
	}); err != nil {
		return t, err
	}
	t.LatencyAll, err = o.mergeLatency(rs, "totals latency_all", func(r *result.Result) []result.Latency {
		return []result.Latency{r.Totals.LatencyAll}
	})
	return t, err
}

func addClasses(dst, src map[string]int64) {
	for c, n := range src {
		dst[c] += n
	}
}

func (o Options) generator(rs []*result.Result, requests int64) (result.Generator, error) {
	var g result.Generator
	// Core-seconds the inputs had: worker processes on one host share its
	// cores, so a host counts its cores once over the time its runs
	// covered (overlapping runs once); inputs with no host name count on
	// their own.
	type span struct{ from, to time.Time }
	cores := map[string]int{}
	spans := map[string][]span{}
	var order []string
	for i, r := range rs {
		rg := r.Generator
		g.CPUSeconds += rg.CPUSeconds
		g.MaxRSS = max(g.MaxRSS, rg.MaxRSS)
		g.GCPauseP99US = max(g.GCPauseP99US, rg.GCPauseP99US)
		host := rg.Host
		if host == "" {
			host = fmt.Sprintf("\x00input %d", i)
		}
		if _, ok := cores[host]; !ok {
			order = append(order, rg.Host)
		}
		cores[host] = max(cores[host], rg.Cores)
		spans[host] = append(spans[host], span{r.Run.Started, r.Run.Started.Add(seconds(r.Run.DurationS))})
	}
	var coreSeconds float64
	for host, c := range cores {
		g.Cores += c
		ss := spans[host]
		sort.Slice(ss, func(a, b int) bool { return ss[a].from.Before(ss[b].from) })
		var covered time.Duration
		var end time.Time
		for _, sp := range ss {
			from := sp.from
			if from.Before(end) {
				from = end
			}
			if sp.to.After(from) {
				covered += sp.to.Sub(from)
				end = sp.to
			}
		}
		coreSeconds += covered.Seconds() * float64(c)
	}
	if len(cores) == 1 {
		g.Host = order[0]
	}
	if requests > 0 {
		g.CPUPerRequestUS = g.CPUSeconds * 1e6 / float64(requests)
	}
	if coreSeconds > 0 {
		g.CPUUtil = g.CPUSeconds / coreSeconds
	}
	var err error
	g.Lag, err = o.mergeLatency(rs, "generator lag", func(r *result.Result) []result.Latency {
		return []result.Latency{r.Generator.Lag}
	})
	return g, err
}
