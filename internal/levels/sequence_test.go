package levels

import (
	"reflect"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// A sweep's server metrics showed only one level's, under names such as
// host[input 3]: each level watched the same servers, and the merge named
// its series per input. The levels' series join into one per name, each
// level's samples at its place on the whole run's clock.
func TestMonitorsJoinAcrossLevels(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	level := func(startS float64, v ...float64) *result.Result {
		return &result.Result{
			Run: result.RunInfo{Started: t0.Add(time.Duration(startS * float64(time.Second))), DurationS: 2},
			Monitors: map[string]result.MonitorSeries{
				"host.cpu_pct": {Unit: "pct", T: []float64{0, 1}, V: v},
			},
		}
	}
	top := &result.Result{Run: result.RunInfo{Started: t0}}
	ms, _ := monitorsInSequence(top, []*result.Result{level(0, 10, 20), level(5, 30, 40)})
	want := map[string]result.MonitorSeries{"host.cpu_pct": {Unit: "pct", T: []float64{0, 1, 5, 6}, V: []float64{10, 20, 30, 40}}}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("monitors %+v, want %+v", ms, want)
	}
}

// A level's server samples are on its own clock, which starts where its
// ramp was cut off, as its series are; the ramp's samples are not its.
func TestMonitorsFromTheCut(t *testing.T) {
	ms, ps := monitorsFrom(map[string]result.MonitorSeries{
		"postgres.connections.active": {Unit: "count", T: []float64{0, 1, 2, 3}, V: []float64{1, 2, 3, 4}},
	}, []result.MonitorProblem{{Monitor: "postgres", T: 0.5, Message: "slow"}}, 1.5)
	want := result.MonitorSeries{Unit: "count", T: []float64{0.5, 1.5}, V: []float64{3, 4}}
	if got := ms["postgres.connections.active"]; !reflect.DeepEqual(got, want) {
		t.Errorf("series %+v, want %+v", got, want)
	}
	if len(ps) != 1 || ps[0].T != 0 {
		t.Errorf("problems %+v: want the ramp's problem kept, at the level's start", ps)
	}
}
