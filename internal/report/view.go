package report

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// classTitles name failure classes in tables, in the classic load-test report's words where the
// seed has them.
var classTitles = map[sample.Class]string{
	sample.RateLimited:   "Rate Limited (429)",
	sample.ClientError:   "Client Errors (4xx)",
	sample.ServerError:   "Server Errors (5xx)",
	sample.Timeout:       "Timeouts",
	sample.ConnRefused:   "Connection Refused",
	sample.ConnReset:     "Connection Reset",
	sample.DNS:           "DNS Errors",
	sample.TLS:           "TLS Errors",
	sample.Check:         "Check Failures",
	sample.Capture:       "Capture Failures",
	sample.Dropped:       "Dropped",
	sample.Interrupted:   "Interrupted",
	sample.PortExhausted: "Port Exhausted",
	sample.FDLimit:       "FD Limit",
	sample.Other:         "Other",
	sample.Refused:       "Refused (unprocessed)",
	sample.Protocol:      "Protocol Violations",
	sample.ServerClose:   "Closed by Server",
	sample.Redirects:     "Redirect Failures",
	sample.Proxy:         "Proxy Failures",
}

// classTitle names a class from a result file, including classes a newer
// writer knows and this version does not.
func classTitle(name string) string {
	if c, ok := sample.ParseClass(name); ok {
		if t, ok := classTitles[c]; ok {
			return t
		}
	}
	return name
}

// presentClasses lists the failure classes with a count in any of the maps,
// known classes in report order, then unknown ones by name.
func presentClasses(maps ...map[string]int64) []string {
	var out []string
	for _, c := range sample.FailureClasses() {
		for _, m := range maps {
			if m[c.String()] > 0 {
				out = append(out, c.String())
				break
			}
		}
	}
	var unknown []string
	seen := map[string]bool{}
	for _, m := range maps {
		for name, n := range m {
			if _, ok := sample.ParseClass(name); !ok && n > 0 && !seen[name] {
				seen[name] = true
				unknown = append(unknown, name)
			}
		}
	}
	sort.Strings(unknown)
	return append(out, unknown...)
}

// loadLabel names a run by its load the way the classic load-test report's column headers do
// ("100 users"), falling back to the plan name; a run of several levels
// by its levels.
func loadLabel(r *result.Result) string {
	switch {
	case len(r.Levels) > 0:
		return levelsLoad(r) // headline_levels.go
	case r.Run.Model == "closed" && r.Run.MaxUsers > 0:
		return plural(r.Run.MaxUsers, "user")
	case r.Run.Model == "open" && r.Run.PeakRate > 0:
		return number(r.Run.PeakRate) + "/s"
	case r.Plan.Name != "":
		return r.Plan.Name
	}
	return "run"
}

// verdict is the one-line answer at the top of a report.
type verdict struct {
	State string // "pass", "fail" or "none": also the CSS class
	Text  string
}

func verdictOf(r *result.Result) verdict {
	failed := 0
	for _, t := range r.Thresholds {
		if !t.Pass || t.Error != "" {
			failed++
		}
	}
	var v verdict
	switch {
	case len(r.Thresholds) == 0:
		v = verdict{"none", "no thresholds"}
	case failed > 0:
		v = verdict{"fail", fmt.Sprintf("FAIL — %d of %d thresholds failed", failed, len(r.Thresholds))}
	default:
		v = verdict{"pass", fmt.Sprintf("PASS — all %s passed", plural(len(r.Thresholds), "threshold"))}
	}
	if r.Run.Partial {
		v.Text += " (partial result)"
	}
	return v
}

func (v verdict) mark() string {
	switch v.State {
	case "pass":
		return "✓"
	case "fail":
		return "✗"
	}
	return "–"
}

// throughput is requests per second over the measured duration.
func throughput(r *result.Result) float64 {
	if r.Run.DurationS <= 0 {
		return 0
	}
	return float64(r.Totals.Timed()) / r.Run.DurationS
}

func failRate(requests, failed int64) float64 {
	if requests == 0 {
		return 0
	}
	return float64(failed) / float64(requests)
}

// startedLine prints the start in UTC so a report reads the same wherever
// it is rendered.
func startedLine(r *result.Result) string {
	if r.Run.Started.IsZero() {
		return ""
	}
	return r.Run.Started.UTC().Format("2006-01-02 15:04:05 MST")
}

func latencyOrDash(l result.Latency, us int64) string {
	if l.Count == 0 {
		return "-"
	}
	return Duration(us)
}

// textSummary is the terminal summary, reused inside Markdown and HTML
// reports so they carry the full figures verbatim.
func textSummary(r *result.Result) (string, error) {
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		return "", err
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// stepRow is one line of the per-step table.
type stepRow struct {
	Name, Group          string
	Requests, Successful int64
	SuccessPct, Failures string
	P50, P95, P99, Max   string
}

func stepRows(r *result.Result, lat []result.Latency) []stepRow {
	names := stepNames(r.Steps)
	rows := make([]stepRow, len(r.Steps))
	for i, s := range r.Steps {
		l := lat[i]
		f := strings.Join(failureList(s.ByClass), ", ")
		if f == "" {
			f = "none"
		}
		rows[i] = stepRow{
			Name: names[i], Group: s.Group, Requests: s.Requests, Successful: s.Successful,
			SuccessPct: pct(s.Successful, s.Requests), Failures: f,
			P50: latencyOrDash(l, l.P50US), P95: latencyOrDash(l, l.P95US), P99: latencyOrDash(l, l.P99US), Max: latencyOrDash(l, l.MaxUS),
		}
	}
	return rows
}

// levelLabel names a level of a sweep or gates run as the classic load-test report's column
// headers do: "100 users", "500/s", "50 tenants".
func levelLabel(l result.Level) string {
	v := number(l.Value)
	switch l.Vary {
	case "users":
		if l.Value == 1 {
			return "1 user"
		}
		return v + " users"
	case "rate":
		return v + "/s"
	case "":
		return v
	}
	return v + " " + l.Vary
}

// levelFigures are the classic load-test report's per-level rows for one level.
type levelFigures struct {
	label, p95, failed, rps string
	pass                    string
}

func levelsOf(r *result.Result) ([]levelFigures, error) {
	var out []levelFigures
	for i, l := range r.Levels {
		lf := levelFigures{label: levelLabel(l), p95: "-", failed: "-", rps: "-"}
		if l.Result != nil {
			ok, err := l.Result.Totals.LatencyOK.Recompute()
			if err != nil {
				return nil, fmt.Errorf("level %d (%s): %w", i+1, lf.label, err)
			}
			lf.p95 = latencyOrDash(ok, ok.P95US)
			lf.failed = pct(l.Result.Totals.Failed, l.Result.Totals.Requests)
			lf.rps = fmt.Sprintf("%.2f/s", throughput(l.Result))
		}
		if len(l.SLO) > 0 {
			lf.pass = "✗"
			if l.Pass {
				lf.pass = "✓"
			}
			if l.Suspect != "" {
				// The generator lagged: not a verdict on the target.
				lf.pass += " (suspect)"
			}
		}
		out = append(out, lf)
	}
	return out, nil
}

// levelsTable is the classic load-test report's table of a multi-level run: P95, requests
// failed and throughput, one column per level, and each level's SLO
// verdict when any level was judged; nil for a run of one level.
func levelsTable(r *result.Result) (*plainTable, error) {
	if len(r.Levels) == 0 {
		return nil, nil
	}
	ls, err := levelsOf(r)
	if err != nil {
		return nil, err
	}
	t := &plainTable{Head: []string{"Metric"}}
	p95, failed, rps, slo := []string{"P95"}, []string{"Requests Failed"}, []string{"Throughput"}, []string{"SLO"}
	judged := false
	for _, l := range ls {
		t.Head = append(t.Head, l.label)
		p95, failed, rps, slo = append(p95, l.p95), append(failed, l.failed), append(rps, l.rps), append(slo, l.pass)
		judged = judged || l.pass != ""
	}
	t.Rows = [][]string{p95, failed, rps}
	if judged {
		t.Rows = append(t.Rows, slo)
	}
	return t, nil
}
