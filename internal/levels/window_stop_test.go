package levels

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// A stop that lands as the population comes in place (a SIGTERM, a
// Ctrl-C): the cut's snapshot is taken as the run stops and reads later
// than the stopped run's end. The level measured nothing, and it was
// stopped, so it must say so: before, it came back whole, "the run ended
// before the population was in place", and a --workers level's segments
// stopped by SIGTERM were taken for segments that ran their level out.
func TestLevelStoppedAsItsPopulationCameInPlaceIsPartial(t *testing.T) {
	p := mustPlan(t, getPlan("http://127.0.0.1:9", "/", "", "    - {duration: 1s, users: 1}"))
	lr := newLevelRun(Options{Hold: time.Minute}, "users", 2, 0, 1)
	now := time.Now()
	lr.cut = &result.Result{Run: result.RunInfo{Started: now, Ended: now.Add(60 * time.Millisecond), DurationS: 0.06}}
	lr.inPlace = true
	ran := &result.Result{Run: result.RunInfo{Started: now, Ended: now.Add(70 * time.Millisecond), DurationS: 0.05,
		Partial: true, PartialReason: "interrupted (SIGTERM)"}, Totals: result.Totals{Requests: 3, ByClass: map[string]int64{}}}
	var lv result.Level
	res, err := lr.window(&lv, p, ran)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "SIGTERM") {
		t.Errorf("level result: partial %v (%q), want partial, stopped by SIGTERM", res.Run.Partial, res.Run.PartialReason)
	}
	if res.Totals.Requests != 0 {
		t.Errorf("%d requests in a level that measured nothing", res.Totals.Requests)
	}
}
