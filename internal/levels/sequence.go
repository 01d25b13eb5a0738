package levels

import (
	"maps"
	"slices"

	"github.com/stampede-load/stampede/internal/result"
)

// sequential corrects what a merge of side-by-side segments gets wrong for
// levels, which ran one after another: the measured time is the sum of the
// levels' measured parts (the merge's span would count the unmeasured ramps
// between them, understating throughput); a connection population's peak is
// the largest level's, not the sum; and a server's series is one series
// over the levels, under the name the plan gave it, not one per level.
func sequential(top *result.Result, rs []*result.Result) {
	top.Run.DurationS = 0
	for _, r := range rs {
		top.Run.DurationS += r.Run.DurationS
	}
	if top.Run.DurationS > 0 && top.Generator.Cores > 0 {
		top.Generator.CPUUtil = top.Generator.CPUSeconds / (top.Run.DurationS * float64(top.Generator.Cores))
	}
	top.Connections = connectionsInSequence(rs)
	top.Monitors, top.MonitorProblems = monitorsInSequence(top, rs)
}

// connectionsInSequence adds the levels' connection counts (each level
// opened its own population) but takes each scenario's target and peak as
// the largest level's. Only the last level's connections were open at the
// end; every earlier level's were closed by the level's end, so they count
// as disconnects with the reason level_end, and Opened = OpenAtEnd + the
// disconnects still holds.
func connectionsInSequence(rs []*result.Result) *result.Connections {
	var out *result.Connections
	idx := map[string]int{}
	for n, r := range rs {
		if r.Connections == nil {
			continue
		}
		if out == nil {
			out = &result.Connections{}
		}
		last := n == len(rs)-1
		for _, s := range r.Connections.Scenarios {
			i, ok := idx[s.Scenario]
			if !ok {
				i = len(out.Scenarios)
				idx[s.Scenario] = i
				out.Scenarios = append(out.Scenarios, result.ConnScenario{
					Scenario: s.Scenario, Protocol: s.Protocol, HubProtocol: s.HubProtocol, ByClass: map[string]int64{},
				})
			}
			addInSequence(&out.Scenarios[i], s, last)
		}
	}
	return out
}

// LevelEnd is the disconnect reason of the connections a level closed as
// it ended, in the whole run of several levels.
const LevelEnd = "level_end"

// addInSequence adds level s to the levels before it: events add up, but
// the levels ran one after another, so the population is the largest
// level's and what is open at the end the last one's; the connections an
// earlier level still held when it ended closed then (LevelEnd).
func addInSequence(m *result.ConnScenario, s result.ConnScenario, last bool) {
	m.Target = max(m.Target, s.Target)
	m.PeakOpen = max(m.PeakOpen, s.PeakOpen)
	m.AddCounts(s)
	if last {
		m.OpenAtEnd = s.OpenAtEnd
	} else if s.OpenAtEnd > 0 {
		m.Disconnects = result.AddCounts(m.Disconnects, map[string]int64{LevelEnd: s.OpenAtEnd})
	}
}

// monitorsInSequence joins each server series of the levels into one on
// the whole run's clock, under its own name: the levels watched the same
// servers one after another.
func monitorsInSequence(top *result.Result, rs []*result.Result) (map[string]result.MonitorSeries, []result.MonitorProblem) {
	var out map[string]result.MonitorSeries
	var problems []result.MonitorProblem
	for _, r := range rs {
		off := r.Run.Started.Sub(top.Run.Started).Seconds()
		for _, name := range slices.Sorted(maps.Keys(r.Monitors)) {
			if out == nil {
				out = map[string]result.MonitorSeries{}
			}
			in, m := r.Monitors[name], out[name]
			m.Unit = in.Unit
			for i, t := range in.T {
				if i < len(in.V) {
					m.T = append(m.T, t+off)
					m.V = append(m.V, in.V[i])
				}
			}
			out[name] = m
		}
		for _, p := range r.MonitorProblems {
			p.T += off
			if p.LastT > 0 {
				p.LastT += off
			}
			problems = append(problems, p)
		}
	}
	return out, problems
}
