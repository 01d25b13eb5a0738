package collect

import (
	"sort"

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
// "0.993", "1204/s", "3.20s". The collectors' side and the reports must
// agree on how a value reads, so both go through result's one formatter.
func FormatValue(unit string, v float64) string {
	return result.FormatMonitorValue(unit, v)
}
