package gate

import (
	"fmt"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// Limits behind the indicators. They are the points past which the classic load-test report's
// reports, and the design, call a run unhealthy or its figures suspect.
const (
	overloadedBelow     = 0.95  // success rate
	serverErrorsAbove   = 0.05  // share of requests answered 5xx
	timeoutsQueueing    = 0.05  // share of requests timed out
	generatorLagAbove   = 1000  // µs, lag p99
	generatorCPUAtLeast = 0.9   // share of usable cores
	percent             = 100.0 // for messages
)

// Severities of an indicator: a warning casts doubt on the run or the
// target; info explains how to read the figures.
const (
	SeverityWarn = "warn"
	SeverityInfo = "info"
)

// Indicators returns findings about r, warnings first, each with the
// numbers that triggered it so a reader can check the reasoning.
func Indicators(r *result.Result) []result.Indicator {
	var out findings
	out.classes(r)
	out.generator(r)
	out = append(out, monitorIndicators(r)...)
	if r.Run.Partial {
		reason := r.Run.PartialReason
		if reason == "" {
			reason = "the run did not complete"
		}
		out.warn("partial", fmt.Sprintf("Partial result (%s) - figures cover only part of the planned run", reason), nil)
	}
	if r.Run.Model == "closed" && !r.Run.Paced {
		out = append(out, result.Indicator{
			ID: "closed_model", Severity: SeverityInfo,
			Message: "Closed model: latencies are service times measured from the actual send; under overload a closed model slows its own arrival rate, so these are not what users would see at a fixed arrival rate - use an open model (rate:) for that",
		})
	}
	return out
}

// findings are indicators in the order they are found.
type findings []result.Indicator

func (f *findings) warn(id, msg string, ev map[string]float64) {
	*f = append(*f, result.Indicator{ID: id, Severity: SeverityWarn, Message: msg, Evidence: ev})
}

func (f *findings) add(ind result.Indicator, ok bool) {
	if ok {
		*f = append(*f, ind)
	}
}

// classes are the findings the failure classes and the series show.
func (f *findings) classes(r *result.Result) {
	t := r.Totals
	cls := func(c sample.Class) int64 { return t.ByClass[c.String()] }
	share := func(n int64) float64 {
		if t.Requests == 0 {
			return 0
		}
		return float64(n) / float64(t.Requests)
	}
	if t.Requests > 0 && share(t.Successful) < overloadedBelow {
		f.warn("overloaded", "Success rate is below 95% - system may be overloaded", map[string]float64{
			"success_rate": share(t.Successful), "requests": float64(t.Requests), "successful": float64(t.Successful),
		})
	}
	f.add(errorsDominated(t))
	f.add(loopCrossOrigin(r)) // crossorigin.go
	f.add(saturatedInRun(r.Series, r.Run.DurationS))
	if n := cls(sample.ServerError); share(n) > serverErrorsAbove {
		f.warn("server_errors", fmt.Sprintf("High server error rate (%.2f%%) - check application logs", share(n)*percent),
			map[string]float64{"server_error_rate": share(n), "server_error": float64(n)})
	}
	if n := cls(sample.RateLimited); n > 0 {
		f.warn("rate_limited", fmt.Sprintf("%d requests were rate limited (429, %.2f%%) - the target throttled this load, so the figures measure its rate limiter rather than its capacity", n, share(n)*percent),
			map[string]float64{"rate_limited": float64(n), "rate_limited_rate": share(n)})
	}
	if n := cls(sample.Timeout); n > 0 {
		msg := fmt.Sprintf("%d requests timed out (%.2f%%)", n, share(n)*percent)
		if share(n) >= timeoutsQueueing {
			msg += " - this many timeouts usually means requests queue behind a full connection or worker pool on the target"
		} else {
			msg += " - check the slowest endpoints and the request timeout"
		}
		f.warn("timeouts", msg, map[string]float64{"timeout": float64(n), "timeout_rate": share(n)})
	}
	f.add(timeoutsClustered(r))
	f.add(connectionErrors(t.ByClass))
	if n := cls(sample.Dropped); n > 0 {
		f.warn("dropped", fmt.Sprintf("%d arrivals were dropped (%.2f%% of offered load) because max_in_flight was reached - the offered load was not delivered, so the target was tested at less than the planned rate", n, share(n)*percent),
			map[string]float64{"dropped": float64(n), "dropped_rate": share(n)})
	}
}

// generator are the findings about the generator itself: lag, CPU and a
// late start, each of which makes the figures suspect.
func (f *findings) generator(r *result.Result) {
	if p99, ok := lagP99(r.Generator.Lag); ok && p99 > generatorLagAbove {
		f.warn("generator_lag", fmt.Sprintf("Generator lag p99 is %s (over 1ms) - the generator could not start work on time, so latency and throughput figures from this run are suspect", formatDuration(p99)),
			map[string]float64{"lag_p99_us": float64(p99)})
	}
	if g := r.Generator; g.CPUUtil >= generatorCPUAtLeast {
		cores := ""
		if g.Cores > 0 {
			cores = fmt.Sprintf(" of %d cores", g.Cores)
			if g.Cores == 1 {
				cores = " of 1 core"
			}
		}
		f.warn("generator_cpu", fmt.Sprintf("Generator CPU was at %.2f%%%s - the generator was CPU bound, so the target may have had more to give; use more cores or split the run into segments", g.CPUUtil*percent, cores),
			map[string]float64{"cpu_util": g.CPUUtil, "cores": float64(g.Cores), "cpu_s": g.CPUSeconds})
	}
	if late := r.Run.LateStartS; late > 0 {
		f.warn("late_start", fmt.Sprintf("The load began %s after its start time (--start-at), which the setup (or a late process) overran - it kept to the shared schedule, so what the profile's first %s held was neither sent nor counted; duration and throughput are over the time the load ran", formatDuration(int64(late*1e6)), formatDuration(int64(late*1e6))),
			map[string]float64{"late_start_s": late})
	}
}

// connectionErrors names each kind present with its likely cause, because
// the fix differs: refused/reset point at the target, port and fd limits at
// the generator's own machine.
func connectionErrors(byClass map[string]int64) (result.Indicator, bool) {
	kinds := []struct {
		class sample.Class
		label string
		hint  string
	}{
		{sample.ConnRefused, "refused", "refused suggests the server's listen backlog or connection pool is full (or it is down)"},
		{sample.ConnReset, "reset", "reset suggests the server or a proxy drops connections under load (backlog, pool or keep-alive limits)"},
		{sample.PortExhausted, "port exhausted", "port exhausted means the generator ran out of local ports (keep connections alive, or add source addresses: http: {source_addresses: 127.0.0.0/28})"},
		{sample.FDLimit, "fd limit", "fd limit means the generator hit its open file limit (raise the hard limit, ulimit -Hn, or split the load over processes)"},
	}
	var counts, hints []string
	ev := map[string]float64{}
	var total int64
	for _, k := range kinds {
		n := byClass[k.class.String()]
		if n == 0 {
			continue
		}
		total += n
		counts = append(counts, fmt.Sprintf("%s %d", k.label, n))
		hints = append(hints, k.hint)
		ev[k.class.String()] = float64(n)
	}
	if total == 0 {
		return result.Indicator{}, false
	}
	return result.Indicator{
		ID: "connection_errors", Severity: SeverityWarn, Evidence: ev,
		Message: fmt.Sprintf("%d connection errors (%s) - %s", total, strings.Join(counts, ", "), strings.Join(hints, "; ")),
	}, true
}

// lagP99 trusts the histogram over the stored figure, falling back to the
// figure only when the histogram is unreadable.
func lagP99(l result.Latency) (int64, bool) {
	if h, err := l.Histogram(); err == nil {
		if h.TotalCount() == 0 {
			return 0, false
		}
		return h.ValueAtPercentile(99), true
	}
	return l.P99US, l.Count > 0
}

// LagSuspect says when a result's figures say more about the generator
// than the target: its lag p99 is over the generator_lag limit and at
// least a quarter of latencyUS (the largest p95 it is compared with), so
// the generator starting work late could explain a difference of that
// size. A few milliseconds of lag on a busy machine leave a 150ms p95
// judgeable; 657ms of lag next to a 1s p95 do not.
func LagSuspect(r *result.Result, latencyUS int64) (string, bool) {
	if r == nil {
		return "", false
	}
	p99, ok := lagP99(r.Generator.Lag)
	if !ok || p99 <= generatorLagAbove || p99*lagShareOfLatency < latencyUS {
		return "", false
	}
	return fmt.Sprintf("generator lag p99 %s against a p95 of %s - the generator started work late, so it, not the target, may explain these figures", formatDuration(p99), formatDuration(latencyUS)), true
}

// lagShareOfLatency: lag from a quarter of the latency up makes the
// latency suspect.
const lagShareOfLatency = 4
