package merge

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// connections sums the inputs' connection populations scenario by
// scenario. Counts add up exactly, hub by hub too. PeakOpen is the sum of
// the inputs' peaks: the segments of one test follow one shared schedule
// and peak together, so the sum is the whole's peak; for runs that did
// not overlap it is an upper bound. The per-second retry series add up
// second by second on the merged clock (t = 0 at start), and PeakWaiting
// is the largest second of the summed waiting series.
func connections(rs []*result.Result, start time.Time) *result.Connections {
	var out *result.Connections
	idx := map[string]int{}
	for _, r := range rs {
		if r.Connections == nil {
			continue
		}
		if out == nil {
			out = &result.Connections{}
		}
		for _, s := range r.Connections.Scenarios {
			i, ok := idx[s.Scenario]
			if !ok {
				i = len(out.Scenarios)
				idx[s.Scenario] = i
				out.Scenarios = append(out.Scenarios, result.ConnScenario{
					Scenario: s.Scenario, Protocol: s.Protocol, ByClass: map[string]int64{},
					HubProtocol: s.HubProtocol,
				})
			}
			m := &out.Scenarios[i]
			// Segments ran together: their populations add up too.
			m.Target += s.Target
			m.PeakOpen += s.PeakOpen
			m.OpenAtEnd += s.OpenAtEnd
			m.AddCounts(s)
			m.Hubs = result.AddHubs(m.Hubs, s.Hubs)
			off := int(math.Round(r.Run.Started.Sub(start).Seconds()))
			m.AttemptsPerS = addSeconds(m.AttemptsPerS, s.AttemptsPerS, off)
			m.WaitingPerS = addSeconds(m.WaitingPerS, s.WaitingPerS, off)
			m.PeakWaiting += s.PeakWaiting
		}
	}
	if out == nil {
		return nil
	}
	for i := range out.Scenarios {
		if w := out.Scenarios[i].WaitingPerS; len(w) > 0 {
			out.Scenarios[i].PeakWaiting = slices.Max(w)
		}
	}
	return out
}

// addSeconds adds the per-second series in, which began off seconds
// after the merged start, into dst.
func addSeconds(dst, in []int64, off int) []int64 {
	off = max(off, 0)
	for len(dst) < off+len(in) {
		dst = append(dst, 0)
	}
	for i, n := range in {
		dst[off+i] += n
	}
	return dst
}

// selfMonitor is the generator's own process, which every segment records.
const selfMonitor = "process[self]"

// monitors puts every input's server series on the merged clock (t = 0 at
// the earliest start). Only segment 0 of a distributed run watches the
// servers, so their series come from one input. The generator's own
// process is recorded by every input and its figures add up (CPU, memory,
// open files, threads, switches of several processes are sums), so
// process[self] becomes the sum over the inputs: with --workers it is the
// whole generator. Any other series that several inputs recorded (whole
// runs merged, each watching its own servers) is kept once per input,
// named by the input's segment or position, so nothing is lost.
func (o Options) monitors(rs []*result.Result, start time.Time) (map[string]result.MonitorSeries, []result.MonitorProblem) {
	// How many inputs recorded each series, and each monitor (problems
	// name the monitor, not a series).
	owners, monitorOwners := map[string]int{}, map[string]int{}
	for _, r := range rs {
		seen := map[string]bool{}
		for k := range r.Monitors {
			owners[k]++
			label, _ := result.SplitMonitorKey(k)
			seen[label] = true
		}
		for _, p := range r.MonitorProblems {
			seen[p.Monitor] = true
		}
		for label := range seen {
			monitorOwners[label]++
		}
	}
	out := map[string]result.MonitorSeries{}
	selfs := map[string][]result.MonitorSeries{}
	var probs []result.MonitorProblem
	for i, r := range rs {
		off := r.Run.Started.Sub(start).Seconds()
		for k, s := range r.Monitors {
			s = s.Shifted(off)
			label, _ := result.SplitMonitorKey(k)
			switch {
			case owners[k] == 1:
				out[k] = s
			case label == selfMonitor:
				selfs[k] = append(selfs[k], s)
			default:
				out[o.qualify(k, i, r)] = s
			}
		}
		for _, p := range r.MonitorProblems {
			p.T += off
			if p.LastT != 0 {
				p.LastT += off
			}
			if monitorOwners[p.Monitor] > 1 && p.Monitor != selfMonitor {
				p.Monitor = o.qualify(p.Monitor, i, r)
			}
			probs = append(probs, p)
		}
	}
	for k, parts := range selfs {
		out[k] = sumSeries(parts)
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].T < probs[j].T })
	if len(out) == 0 {
		out = nil
	}
	return out, probs
}

// qualify names input i's copy of a series several inputs recorded:
// "host.cpu.busy_pct" → "host[segment 2].cpu.busy_pct",
// "postgres[main].x" → "postgres[main, segment 2].x".
func (o Options) qualify(key string, i int, r *result.Result) string {
	who := o.name(i)
	if s := r.Run.Segment; s.Count > 1 {
		who = fmt.Sprintf("segment %d", s.Index+1)
	}
	label, metric := result.SplitMonitorKey(key)
	if strings.HasSuffix(label, "]") {
		label = label[:len(label)-1] + ", " + who + "]"
	} else {
		label += "[" + who + "]"
	}
	if metric == "" {
		return label
	}
	return label + "." + metric
}

// sumSeries adds series sampled by different processes at slightly
// different instants. Samples are matched on a grid of the usual (median)
// sampling interval; within its span a process with no sample in a slot
// contributes its latest earlier value (its sample fell into the next
// slot), after its last sample nothing (it ended), and slots before every
// process has sampled once are left out, so the sum never dips because one
// process started sampling later.
func sumSeries(parts []result.MonitorSeries) result.MonitorSeries {
	out := result.MonitorSeries{Unit: parts[0].Unit}
	var gaps []float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range parts {
		for i := 1; i < len(p.T); i++ {
			if d := p.T[i] - p.T[i-1]; d > 0 {
				gaps = append(gaps, d)
			}
		}
		if len(p.T) > 0 {
			lo, hi = min(lo, p.T[0]), max(hi, p.T[len(p.T)-1])
		}
	}
	if math.IsInf(lo, 1) {
		return out
	}
	// The grid is the usual sampling interval: the median gap, so one
	// late sample (a busy generator) does not make a grid ten times finer
	// filled with held-over values.
	step := 1.0
	if len(gaps) > 0 {
		sort.Float64s(gaps)
		step = gaps[len(gaps)/2]
	}
	slot := func(t float64) int { return int(math.Round((t - lo) / step)) }
	n := slot(hi) + 1
	total := make([]float64, n)
	from := 0 // the first slot in which every part has a value
	for _, p := range parts {
		if len(p.T) == 0 {
			continue
		}
		first, end := slot(p.T[0]), slot(p.T[len(p.T)-1])
		from = max(from, first)
		last, j := math.NaN(), 0
		for s := first; s <= end; s++ {
			for j < len(p.T) && slot(p.T[j]) <= s {
				if j < len(p.V) && !math.IsNaN(p.V[j]) {
					last = p.V[j]
				}
				j++
			}
			if !math.IsNaN(last) {
				total[s] += last
			}
		}
	}
	for s := from; s < n; s++ {
		out.T = append(out.T, math.Round((lo+float64(s)*step)*1e6)/1e6)
		out.V = append(out.V, total[s])
	}
	return out
}
