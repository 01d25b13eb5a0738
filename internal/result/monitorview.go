package result

import (
	"math"
	"strconv"
	"strings"
)

// minSteadyIntervals is the shortest plateau taken as the steady part; a
// shorter one (a ramp that only touches its peak at the end) is no steady
// part at all, and the whole run stands in for it.
const minSteadyIntervals = 3

// SteadyWindow is the part of the run, in seconds on the run clock, that
// monitor figures are summarised over: from the first to the last interval
// at the peak target (users or arrivals per second), so a ramp's idle start
// and the drain after the last stage do not dilute them. Without a plateau
// of a few intervals it is the whole measured run, [LateStartS,
// LateStartS+DurationS].
func (r *Result) SteadyWindow() (from, to float64) {
	// A late start (LateStartS) measured nothing before it began.
	began := max(r.Run.LateStartS, 0)
	end := began + max(r.Run.DurationS, 0)
	whole := func() (float64, float64) { return began, end }
	s := r.Series
	n := min(len(s.T), len(s.Target))
	if n == 0 || s.IntervalS <= 0 {
		return whole()
	}
	peak := 0.0
	for _, v := range s.Target[:n] {
		peak = max(peak, v)
	}
	if peak <= 0 {
		return whole()
	}
	first, last, count := -1, -1, 0
	for i := 0; i < n; i++ {
		if s.Target[i] >= peak*0.999 {
			if first < 0 {
				first = i
			}
			last = i
			count++
		}
	}
	if count < minSteadyIntervals {
		return whole()
	}
	from, to = max(s.T[first], began), s.T[last]+s.IntervalS
	if r.Run.DurationS > 0 {
		to = min(to, end)
	}
	if to <= from {
		return whole()
	}
	return from, to
}

// FormatMonitorValue writes a monitor value compactly in its unit, for
// reports and threshold verdicts: "1.2 GiB", "87.5%", "0.993", "1204/s",
// "3.20s". collect.FormatValue is this same function.
func FormatMonitorValue(unit string, v float64) string {
	switch unit {
	case "bytes":
		return formatBytes(v)
	case "bytes/s":
		return formatBytes(v) + "/s"
	case "pct":
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case "ratio":
		return strconv.FormatFloat(v, 'f', 3, 64)
	case "s":
		return formatNum(v) + "s"
	case "1/s":
		return formatNum(v) + "/s"
	}
	return formatNum(v)
}

func formatNum(v float64) string {
	s := formatNumSigned(v)
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		return s[1:] // a rounding speck below zero reads as "-0.00"
	}
	return s
}

func formatNumSigned(v float64) string {
	a := math.Abs(v)
	switch {
	case a == math.Trunc(a) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func formatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}
