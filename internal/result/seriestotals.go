package result

import "fmt"

// CheckSeriesTotals holds a run's series to its totals: the successes of
// every interval add up to totals.successful, and the failures of every
// interval, class by class, to totals.by_class. A checkpoint whose totals
// ran on past its last interval (the open second counted in one and not
// the other) told two truths at once; a reader cannot know which is the
// run's. A result with no series (a plan with none, a hand-made summary)
// or of levels (each level's window is cut from a longer run) is not
// held to it.
func (r *Result) CheckSeriesTotals() error {
	s := r.Series
	if len(s.T) == 0 || len(r.Levels) > 0 {
		return nil
	}
	var ok int64
	for _, v := range s.OK {
		ok += v
	}
	if ok != r.Totals.Successful {
		return fmt.Errorf("series.ok adds up to %d, but totals.successful is %d: the series and the totals do not describe the same requests", ok, r.Totals.Successful)
	}
	classes := map[string]bool{}
	for c := range s.Failed {
		classes[c] = true
	}
	for c := range r.Totals.ByClass {
		classes[c] = true
	}
	for _, c := range sortedKeys(classes) {
		var n int64
		for _, v := range s.Failed[c] {
			n += v
		}
		if n != r.Totals.ByClass[c] {
			return fmt.Errorf("series.failed.%s adds up to %d, but totals.by_class.%s is %d: the series and the totals do not describe the same requests", c, n, c, r.Totals.ByClass[c])
		}
	}
	return nil
}
