package merge

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// run merges the inputs' run facts: the earliest start and latest end,
// load that adds up, and one partial reason and stop reason for all.
func (o Options) run(rs []*result.Result) (result.RunInfo, error) {
	first := rs[0].Run
	out := result.RunInfo{
		Model:       first.Model,
		Paced:       first.Paced,
		LatencyFrom: latencyFrom(first),
		Segment:     result.Segment{Index: 0, Count: 1},
		Seed:        first.Seed,
		Engine:      first.Engine,
	}
	for _, r := range rs {
		addRun(&out, r.Run)
	}
	out.DurationS = measuredSeconds(rs)
	if reason := o.partialReason(rs); reason != "" {
		out.Partial, out.PartialReason = true, reason
	}
	out.StopReason = o.stopReasons(rs)
	return out, nil
}

// addRun widens out by one input's run.
func addRun(out *result.RunInfo, run result.RunInfo) {
	if out.Started.IsZero() || run.Started.Before(out.Started) {
		out.Started = run.Started
	}
	if run.Ended.After(out.Ended) {
		out.Ended = run.Ended
	}
	out.Paced = out.Paced || run.Paced
	if run.Engine != out.Engine {
		out.Engine = result.EngineMixed
	}
	if out.Seed != nil && (run.Seed == nil || *run.Seed != *out.Seed) {
		out.Seed = nil
	}
	// Segments split users and arrivals so that their shares sum to the
	// whole; repeated whole runs add load the same way.
	out.MaxUsers += run.MaxUsers
	out.PeakRate += run.PeakRate
	// The whole missed what the latest segment missed, at least.
	out.LateStartS = max(out.LateStartS, run.LateStartS)
}

// measuredSeconds is the span from the earliest input's beginning to the
// latest input's measured end. A segment that began late (late_start_s)
// measured its duration from when it began, not from the shared start
// time.
func measuredSeconds(rs []*result.Result) float64 {
	var measuredEnd, began time.Time
	for _, r := range rs {
		b := r.Run.Started.Add(seconds(r.Run.LateStartS))
		if began.IsZero() || b.Before(began) {
			began = b
		}
		if end := b.Add(seconds(r.Run.DurationS)); end.After(measuredEnd) {
			measuredEnd = end
		}
	}
	return max(measuredEnd.Sub(began), 0).Seconds()
}

// partialReason says why the merge is partial ("" when it is not): each
// partial input's reason, and the segments that are missing.
func (o Options) partialReason(rs []*result.Result) string {
	var partial []string
	for i, r := range rs {
		if r.Run.Partial {
			reason := r.Run.PartialReason
			if reason == "" {
				reason = "did not complete"
			}
			partial = append(partial, o.name(i)+": "+reason)
		}
	}
	count := rs[0].Run.Segment.Count
	if missing := missingSegments(rs); len(missing) > 0 {
		partial = append(partial, fmt.Sprintf("merged %d of %d segments (missing %s)",
			len(rs), count, strings.Join(missing, ", ")))
	}
	if len(partial) == 0 {
		return ""
	}
	if same := sameReason(rs); same != "" && len(rs) > 1 && len(partial) == len(rs) {
		// One Ctrl-C stops every segment alike: say it once.
		what := "inputs"
		if count > 1 {
			what = "segments"
		}
		return fmt.Sprintf("%s (all %d %s)", same, len(rs), what)
	}
	return strings.Join(partial, "; ")
}

// missingSegments are the numbers (from 1) of the segments of a
// distributed run that no input is.
func missingSegments(rs []*result.Result) []string {
	var missing []string
	count := rs[0].Run.Segment.Count
	if count <= 1 {
		return nil
	}
	for idx := 0; idx < count; idx++ {
		if !slices.ContainsFunc(rs, func(r *result.Result) bool { return r.Run.Segment.Index == idx }) {
			missing = append(missing, fmt.Sprint(idx+1))
		}
	}
	return missing
}

// stopReasons names each input's stop reason.
func (o Options) stopReasons(rs []*result.Result) string {
	var stops []string
	for i, r := range rs {
		if r.Run.StopReason != "" {
			stops = append(stops, o.name(i)+": "+r.Run.StopReason)
		}
	}
	return strings.Join(stops, "; ")
}

// sameReason is the inputs' partial reason when every input is partial
// for the same one, else "". Reasons that differ only in when they struck
// ("interrupted (Ctrl-C) at 4s of 1m0s" in one segment, "at 5s" in another
// that saw the signal a moment later) are one reason, said with the span
// of those times.
func sameReason(rs []*result.Result) string {
	reason := rs[0].Run.PartialReason
	cause, total, first := splitReasonTime(reason)
	earliest, latest := first, first
	for _, r := range rs {
		if !r.Run.Partial {
			return ""
		}
		if r.Run.PartialReason == reason {
			continue
		}
		c, tot, at := splitReasonTime(r.Run.PartialReason)
		if cause == "" || c != cause || tot != total {
			return ""
		}
		earliest, latest = min(earliest, at), max(latest, at)
	}
	if earliest == latest {
		return reason
	}
	return fmt.Sprintf("%s at %v–%v of %s", cause, earliest, latest, total)
}

// reasonTime matches a reason that says when it struck: "CAUSE at 4s of 1m0s".
var reasonTime = regexp.MustCompile(`^(.+) at (\S+) of (\S+)$`)

// splitReasonTime splits a reason into its cause, the run's planned length
// and the time it struck; cause is "" when the reason names no time.
func splitReasonTime(reason string) (cause, total string, at time.Duration) {
	m := reasonTime.FindStringSubmatch(reason)
	if m == nil {
		return "", "", 0
	}
	d, err := time.ParseDuration(m[2])
	if err != nil {
		return "", "", 0
	}
	return m[1], m[3], d
}

func seconds(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
