package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/stampede-load/stampede/internal/result"
)

// Renderer is the renderer of a result for a format name: text, md (or
// markdown), html, json or junit.
func Renderer(format string) (func(io.Writer, *result.Result) error, error) {
	switch format {
	case "text":
		return Text, nil
	case "json":
		return JSON, nil
	case "md", "markdown":
		return Markdown, nil
	case "html":
		return HTML, nil
	case "junit":
		return JUnit, nil
	}
	return nil, fmt.Errorf("--format %q: expected text, md, html, json or junit", format)
}

// ReadAll reads every result file; result.Read's errors name the file.
func ReadAll(paths []string) ([]*result.Result, error) {
	rs := make([]*result.Result, 0, len(paths))
	for _, p := range paths {
		r, err := result.Read(p)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Brief prints one JSON line with the figures benchmark scripts compare.
func Brief(w io.Writer, r *result.Result) error {
	rps := 0.0
	if r.Run.DurationS > 0 {
		rps = float64(r.Totals.Timed()) / r.Run.DurationS
	}
	l := r.Totals.LatencyAll
	return json.NewEncoder(w).Encode(map[string]any{
		"rps": rps, "requests": r.Totals.Requests, "errors": r.Totals.Failed,
		"p50_ms": float64(l.P50US) / 1e3, "p90_ms": float64(l.P90US) / 1e3, "p99_ms": float64(l.P99US) / 1e3, "max_ms": float64(l.MaxUS) / 1e3,
		"cpu_us_per_request": r.Generator.CPUPerRequestUS, "lag_p99_us": r.Generator.Lag.P99US, "max_rss_bytes": r.Generator.MaxRSS,
	})
}
