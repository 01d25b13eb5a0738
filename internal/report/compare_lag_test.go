package report

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// withLag gives r's generator a lag p99 of us microseconds.
func withLag(r *result.Result, us int64) {
	h := result.NewHistogram()
	for range 100 {
		h.RecordValue(us)
	}
	r.Generator.Lag = result.LatencyOf(h)
}

// A level whose generator lagged by as much as the latencies compared is
// not judged: the generator, not the target, may be the difference. The
// other levels still are.
func TestCompareLeavesLaggingLevelUnjudged(t *testing.T) {
	base, slower := sweep(t, 1, 200), sweep(t, 2, 200)
	withLag(slower.Levels[1].Result, 657_000)
	c, err := Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Verdicts[1]
	all := strings.Join(v.Findings, "\n")
	if v.Outcome != Worse || strings.Contains(all, "worse: at 1,000 users") || strings.Contains(all, "worse: at 1000 users") {
		t.Errorf("outcome %s, findings:\n%s\nwant worse by the 100 and 10k levels only", v.Outcome, all)
	}
	for _, want := range []string{"not judged: After's generator lag p99 657", "totals not judged"} {
		if !strings.Contains(all, want) {
			t.Errorf("findings lack %q:\n%s", want, all)
		}
	}
	// Every level lagging leaves nothing to judge.
	for _, l := range slower.Levels {
		withLag(l.Result, 657_000)
	}
	c, err = Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Verdicts[1]; v.Outcome != Suspect || strings.Contains(strings.Join(v.Findings, "\n"), "worse:") {
		t.Errorf("outcome %s, findings %q: want suspect and no verdict", v.Outcome, v.Findings)
	}
	// A millisecond or two of lag next to latencies a hundred times larger
	// (a busy machine) leaves the comparison judged.
	for _, l := range slower.Levels {
		withLag(l.Result, 2_000)
	}
	withLag(slower, 2_000)
	c, err = Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Verdicts[1]; v.Outcome != Worse || strings.Contains(strings.Join(v.Findings, "\n"), "not judged") {
		t.Errorf("outcome %s, findings %q: want worse, every level judged", v.Outcome, v.Findings)
	}
}
