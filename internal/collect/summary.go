package collect

import (
	"math"
	"sort"
	"strconv"

	"github.com/stampede-load/stampede/internal/result"
)

// Row is one line of the server table in the text summary.
type Row struct {
	Key           string
	Unit          string
	N             int
	Min, Avg, Max float64
}

// Summarize gives min/avg/max of each series over [fromS, toS] — the
// steady part of the run, so a ramp's idle start does not drag the average
// down — sorted by key. Series with no point in the window are left out.
func Summarize(series map[string]result.MonitorSeries, fromS, toS float64) []Row {
	rows := make([]Row, 0, len(series))
	for k, s := range series {
		st := s.Stats(fromS, toS)
		if st.N == 0 {
			continue
		}
		rows = append(rows, Row{Key: k, Unit: s.Unit, N: st.N, Min: st.Min, Avg: st.Avg, Max: st.Max})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Key < rows[j].Key })
	return rows
}

// FormatValue writes v compactly in its unit: "1.2 GiB", "87.5%",
// "0.993", "1,204/s", "3.2s".
func FormatValue(unit string, v float64) string {
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
