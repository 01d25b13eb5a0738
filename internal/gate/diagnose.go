package gate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// Limits behind the diagnostic indicators: the points past which a run's
// own numbers name a likely bottleneck.
const (
	dominantShare      = 0.8  // of failures, for one class to be the cause
	dominantMinFailed  = 10   // failures, so a handful cannot dominate
	saturationWindowS  = 30.0 // the last part of a run looked at
	saturationMinSteps = 5    // intervals in that window
	flatThroughput     = 0.10 // relative change that still counts as flat
	risingLatency      = 1.5  // p95 growth that counts as rising, in a run
	risingMinUS        = 5000 // and by at least this much, so noise at µs scale is not a trend
	levelLoadGrowth    = 1.2  // a level is "more load" than the one before from here
	levelLatencyGrowth = 1.2  // p95 growth across levels that counts as rising
	nearTimeout        = 0.9  // of the configured timeout
	clusterMinShare    = 0.01 // of requests at the timeout
	clusterMinCount    = 5
	defaultTimeout     = 30 * time.Second
)

// errorsDominated names the one failure class behind most failures of an
// overloaded run: the fix differs by class, and a single class means a
// single cause to look at first.
func errorsDominated(t result.Totals) (result.Indicator, bool) {
	if t.Requests == 0 || t.Failed < dominantMinFailed || float64(t.Successful)/float64(t.Requests) >= overloadedBelow {
		return result.Indicator{}, false
	}
	var top string
	var n int64
	for c, k := range t.ByClass {
		if k > n || k == n && c < top {
			top, n = c, k
		}
	}
	share := float64(n) / float64(t.Failed)
	if share < dominantShare {
		return result.Indicator{}, false
	}
	return result.Indicator{
		ID: "errors_dominated", Severity: SeverityWarn,
		Message:  fmt.Sprintf("%.0f%% of failures are %s (%d of %d) - one cause dominates; %s", share*percent, top, n, t.Failed, classHint(top)),
		Evidence: map[string]float64{top: float64(n), "failed": float64(t.Failed), "share": share},
	}, true
}

func classHint(class string) string {
	c, _ := sample.ParseClass(class)
	switch c {
	case sample.ServerError:
		return "the application answers 5xx: read its logs for that error first"
	case sample.RateLimited:
		return "the target's rate limiter is the limit, not its capacity"
	case sample.Timeout:
		return "requests wait past the timeout: look for a queue (connection, worker or database pool)"
	case sample.ConnRefused, sample.ConnReset:
		return "connections are refused or dropped: listen backlog, connection limits or a proxy"
	case sample.Check, sample.Capture:
		return "answers arrive but are wrong: compare a failing body with the expectation"
	case sample.Dropped:
		return "the generator had no free slot: raise max_in_flight or the target is too slow for this rate"
	case sample.ClientError:
		return "the target rejects the requests (4xx): check the plan's data and headers"
	case sample.Redirects:
		return "redirects did not end: a loop, a chain longer than http.redirects, or (event loop) another origin; the messages name the last Location"
	case sample.Proxy:
		return "the proxy refused: check the proxy URL's credentials (407) and that it allows CONNECT to the target's port"
	}
	return "see error_samples for the text"
}

// saturatedInRun looks at the last 30 s (or the whole run when shorter):
// completions per second flat while the offered load grew and p95 climbs,
// and requests in flight grow with it, is a server that has stopped taking
// more work and queues the rest (an API that held at 1.6k RPS whether 400
// or 1,000 users drove it).
//
// Only intervals wholly inside the measured span (measuredS, the run's
// duration_s) count: after the profile ends nothing new is offered and
// the requests in flight drain, so throughput falls and in flight empties
// for reasons that say nothing of a ceiling - on a busy machine the drain
// spans several intervals and hid a saturation it was not part of.
func saturatedInRun(s result.Series, measuredS float64) (result.Indicator, bool) {
	from, n, ok := saturationWindow(s, measuredS)
	if !ok {
		return result.Indicator{}, false
	}
	mid := from + (n-from)/2
	rps := func(a, b int) float64 { return okRPS(s, a, b) }
	p95 := func(a, b int) float64 { return meanP95(s, a, b) }
	// Throughput that stays flat while the offered load does (a gate's
	// hold, a steady stage) is the load being served, not a ceiling: only
	// load that grew across the window can find one.
	if len(s.Target) >= n && s.Target[n-1] <= s.Target[from]*levelLoadGrowth {
		return result.Indicator{}, false
	}
	r1, r2 := rps(from, mid), rps(mid, n)
	l1, l2 := p95(from, mid), p95(mid, n)
	if r1 <= 0 || math.Abs(r2-r1)/r1 > flatThroughput || l1 <= 0 || l2 < l1*risingLatency || l2-l1 < risingMinUS {
		return result.Indicator{}, false
	}
	ev := map[string]float64{
		"window_s": float64(n-from) * s.IntervalS, "ok_rps_first": r1, "ok_rps_last": r2,
		"p95_first_us": l1, "p95_last_us": l2,
	}
	// Little's law: at flat throughput, a target that queues longer holds
	// more requests, so work in flight must have grown with the latency.
	// Latency that rose while in flight did not (a fixed number of closed
	// users) is the generator's host stalling - a loaded machine delays
	// sends and reads alike - not a queue at the target.
	if len(s.InFlight) >= n {
		w1, w2 := meanOf(s.InFlight, from, mid), meanOf(s.InFlight, mid, n)
		if w2 < w1*levelLoadGrowth || w2 <= 0 {
			return result.Indicator{}, false
		}
		ev["in_flight_first"], ev["in_flight_last"] = w1, w2
	}
	if len(s.Target) >= n {
		ev["target_first"], ev["target_last"] = s.Target[from], s.Target[n-1]
	}
	return result.Indicator{
		ID: "saturated", Severity: SeverityWarn, Evidence: ev,
		Message: fmt.Sprintf("Saturated: over the last %.0fs successful throughput stayed flat (%.1f -> %.1f req/s) while p95 rose from %s to %s - the target stopped taking more work and queues the rest; more load will only add latency",
			float64(n-from)*s.IntervalS, r1, r2, formatDuration(int64(l1)), formatDuration(int64(l2))),
	}, true
}

// saturationWindow is the last saturationWindowS of the measured series,
// [from, n); false when it holds too few intervals to judge.
func saturationWindow(s result.Series, measuredS float64) (from, n int, ok bool) {
	n = len(s.T)
	if measuredS > 0 && s.IntervalS > 0 {
		const slack = 1e-6 // T is a float multiple of the interval
		for n > 0 && s.T[n-1]+s.IntervalS > measuredS+slack {
			n--
		}
	} else if n > 0 && n == len(s.Completed) && n >= 2 {
		// The last interval is usually cut short by the end of the run.
		n--
	}
	if n < saturationMinSteps || s.IntervalS <= 0 || len(s.OK) < n || len(s.P95US) < n {
		return 0, 0, false
	}
	from = max(n-int(math.Round(saturationWindowS/s.IntervalS)), 0)
	return from, n, n-from >= saturationMinSteps
}

// okRPS is the successful requests per second over intervals [a, b).
func okRPS(s result.Series, a, b int) float64 {
	var sum int64
	for i := a; i < b; i++ {
		sum += s.OK[i]
	}
	return float64(sum) / (float64(b-a) * s.IntervalS)
}

// meanP95 is the mean p95 of the intervals in [a, b) that had a success;
// 0 when none had.
func meanP95(s result.Series, a, b int) float64 {
	var sum float64
	var k int
	for i := a; i < b; i++ {
		if s.OK[i] > 0 {
			sum += float64(s.P95US[i])
			k++
		}
	}
	if k == 0 {
		return 0
	}
	return sum / float64(k)
}

// meanOf is the mean of v over [a, b).
func meanOf(v []int64, a, b int) float64 {
	var sum int64
	for i := a; i < b; i++ {
		sum += v[i]
	}
	return float64(sum) / float64(b-a)
}

// timeoutsClustered fires when requests pile up at the configured timeout:
// a request that waits for a pool slot waits until the deadline, so the
// slowest requests sit at one value instead of spreading out as slow work
// does (a database connection pool exhausted under a restaurant-ordering
// API).
func timeoutsClustered(r *result.Result) (result.Indicator, bool) {
	all := r.Totals.LatencyAll
	if all.Count == 0 || r.Totals.ByClass[sample.Timeout.String()] == 0 {
		return result.Indicator{}, false
	}
	h, err := all.Histogram()
	if err != nil {
		return result.Indicator{}, false
	}
	maxUS := float64(h.Max())
	// The timeout whose neighbourhood, from 90% to 150% of it, holds the
	// most requests: a request cut off at its deadline on a busy machine
	// may be recorded well past it, so one late straggler (the maximum)
	// must not decide which timeout the requests queued against.
	var limit time.Duration
	var near int64
	dist := h.Distribution()
	for _, t := range ConfiguredTimeouts(r.Plan.Source) {
		us := float64(t.Microseconds())
		lo, hi := int64(nearTimeout*us), int64(1.5*us)
		var n int64
		for _, b := range dist {
			if b.From >= lo && b.To <= hi {
				n += b.Count
			}
		}
		if n > near {
			limit, near = t, n
		}
	}
	if limit == 0 {
		return result.Indicator{}, false
	}
	share := float64(near) / float64(r.Totals.Requests)
	if near < clusterMinCount || share < clusterMinShare {
		return result.Indicator{}, false
	}
	to := r.Totals.ByClass[sample.Timeout.String()]
	return result.Indicator{
		ID: "timeouts_clustered", Severity: SeverityWarn,
		Message: fmt.Sprintf("%d requests (%.2f%%) took at least 90%% of the %v timeout and %d of them timed out - requests wait in a queue until the deadline, which points at a full pool (connections, workers, database) on the target rather than slow work",
			near, share*percent, limit, to),
		Evidence: map[string]float64{
			"timeout_us": float64(limit.Microseconds()), "at_timeout": float64(near), "at_timeout_rate": share,
			"timeout": float64(to), "latency_all_max_us": maxUS,
		},
	}, true
}

// ConfiguredTimeouts reads the request timeouts a plan source sets
// (defaults.timeout, else 30s, and every step's timeout), so a result can
// be judged against its own settings without the plan package. Values
// that do not parse (such as ${ENV} references) are skipped.
func ConfiguredTimeouts(source string) []time.Duration {
	var doc struct {
		Defaults struct {
			Timeout string `yaml:"timeout"`
		} `yaml:"defaults"`
		Scenarios map[string]struct {
			Steps []map[string]any `yaml:"steps"`
		} `yaml:"scenarios"`
	}
	seen := map[time.Duration]bool{defaultTimeout: true}
	if yaml.Unmarshal([]byte(source), &doc) == nil {
		if d, err := time.ParseDuration(strings.TrimSpace(doc.Defaults.Timeout)); err == nil && d > 0 {
			delete(seen, defaultTimeout)
			seen[d] = true
		}
		for _, sc := range doc.Scenarios {
			for _, st := range sc.Steps {
				if s, ok := st["timeout"].(string); ok {
					if d, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && d > 0 {
						seen[d] = true
					}
				}
			}
		}
	}
	out := make([]time.Duration, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
