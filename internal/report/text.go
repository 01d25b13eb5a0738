// Package report renders finished results for people: the terminal
// summary, Markdown, a self-contained HTML page with charts, the JSON
// document, and comparisons of several runs. It reads only result data.
package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// stepLabels name failure classes in per-step and per-group lines.
var stepLabels = map[sample.Class]string{
	sample.RateLimited:   "rate limited",
	sample.ClientError:   "client errors",
	sample.ServerError:   "server errors",
	sample.Timeout:       "timeouts",
	sample.ConnRefused:   "conn refused",
	sample.ConnReset:     "conn reset",
	sample.DNS:           "dns errors",
	sample.TLS:           "tls errors",
	sample.Check:         "check failures",
	sample.Capture:       "capture failures",
	sample.Dropped:       "dropped",
	sample.Interrupted:   "interrupted",
	sample.PortExhausted: "port exhausted",
	sample.FDLimit:       "fd limit",
	sample.Other:         "other",
	sample.Refused:       "refused unprocessed",
	sample.Protocol:      "protocol violations",
	sample.ServerClose:   "closed by server",
	sample.Redirects:     "redirect failures",
	sample.Proxy:         "proxy failures",
}

// connLabels name connection failure kinds inside "Connection Errors: N (...)".
var connLabels = []struct {
	class sample.Class
	label string
}{
	{sample.ConnRefused, "refused"},
	{sample.ConnReset, "reset"},
	{sample.DNS, "dns"},
	{sample.TLS, "tls"},
	{sample.PortExhausted, "port exhausted"},
	{sample.FDLimit, "fd limit"},
}

// Text writes the terminal summary. Its fields, names and order start from
// the classic load-test report's reports so results stay comparable with them; every latency
// figure is recomputed from the histograms rather than read from the file.
func Text(w io.Writer, r *result.Result) error {
	v, err := recompute(r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	header(&b, r)
	if len(r.Levels) > 0 {
		if err := textLevels(&b, r); err != nil { // headline_levels.go
			return err
		}
	} else {
		summary(&b, r)
	}
	errorBreakdown(&b, r.Totals.ByClass)
	errorTable(&b, r) // errors.go
	requestTypes(&b, r.Steps, v.steps)
	statusBlock(&b, r)
	connections(&b, r)   // connections.go
	tlsLine(&b, r.TLS)   // tls.go
	workflowBlock(&b, r) // workflow.go
	latencyBlock(&b, "Latency Statistics (successful requests only):", v.ok, "no successful requests")
	latencyBlock(&b, "Latency Statistics (all requests):", v.all, "no requests")
	thresholds(&b, r.Thresholds)
	generator(&b, r.Generator, v.lag)
	serverMetrics(&b, r)
	indicators(&b, r.Indicators)
	_, err = w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n\n")))
	if err == nil && b.Len() > 0 {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

// figures holds the latencies recomputed from their histograms.
type figures struct {
	ok, all, lag result.Latency
	steps        []result.Latency // successful-request latency per step
}

func recompute(r *result.Result) (figures, error) {
	var f figures
	var err error
	if f.ok, err = r.Totals.LatencyOK.Recompute(); err != nil {
		return f, fmt.Errorf("totals latency_ok: %w", err)
	}
	if f.all, err = r.Totals.LatencyAll.Recompute(); err != nil {
		return f, fmt.Errorf("totals latency_all: %w", err)
	}
	if f.lag, err = r.Generator.Lag.Recompute(); err != nil {
		return f, fmt.Errorf("generator lag: %w", err)
	}
	for _, s := range r.Steps {
		l, err := s.LatencyOK.Recompute()
		if err != nil {
			return f, fmt.Errorf("step %q latency_ok: %w", s.Name, err)
		}
		f.steps = append(f.steps, l)
	}
	return f, nil
}

func header(b *bytes.Buffer, r *result.Result) {
	n := b.Len()
	p := r.Plan
	switch {
	case p.Name != "" && p.File != "":
		fmt.Fprintf(b, "Plan: %s (%s)\n", p.Name, p.File)
	case p.Name != "" || p.File != "":
		fmt.Fprintf(b, "Plan: %s%s\n", p.Name, p.File)
	}
	if p.Target != "" {
		fmt.Fprintf(b, "Target: %s\n", shownTarget(p.Target))
	}
	if m := modelLine(r); m != "" {
		fmt.Fprintf(b, "Model: %s\n", m)
	}
	if s := r.Run.Segment; s.Count > 1 {
		fmt.Fprintf(b, "Segment: %d of %d\n", s.Index+1, s.Count)
	}
	if r.Run.Partial {
		reason := r.Run.PartialReason
		if reason == "" {
			reason = "the run did not complete"
		}
		fmt.Fprintf(b, "PARTIAL RESULT: %s\n", reason)
	}
	if r.Run.StopReason != "" {
		fmt.Fprintf(b, "Stopped early: %s\n", r.Run.StopReason)
	}
	if b.Len() > n {
		b.WriteString("\n")
	}
}

// modelLine says what the latencies mean, since a closed-model p99 and an
// open-model p99 answer different questions.
func modelLine(r *result.Result) string {
	run := r.Run
	if run.Model == "" {
		return ""
	}
	var parts []string
	parts = append(parts, run.Model)
	switch {
	case len(r.Levels) > 0:
		parts = append(parts, levelsLoad(r)) // headline_levels.go
	case run.Model == "closed" && run.MaxUsers > 0:
		parts = append(parts, fmt.Sprintf("up to %d users", run.MaxUsers))
	case run.Model == "open" && run.PeakRate > 0:
		parts = append(parts, fmt.Sprintf("up to %s/s", number(run.PeakRate)))
	}
	if run.Paced {
		parts = append(parts, "paced")
	}
	switch run.Engine {
	case "loop":
		parts = append(parts, "event-loop engine")
	case result.EngineMixed:
		parts = append(parts, "parts on different engines")
	}
	from := run.LatencyFrom
	if from == "" {
		from = "send"
		if run.Model == "open" || run.Paced {
			from = "intended"
		}
	}
	line := strings.Join(parts, ", ")
	switch from {
	case "intended":
		return line + " — latencies from intended start (no coordinated omission)"
	case "send":
		return line + " — latencies are service times from send"
	}
	return line + " — latencies from " + from
}

// number prints a rate without float noise: 200, 12.5, 0.33.
func number(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

func pct(n, of int64) string {
	if of == 0 {
		return "0.00%"
	}
	return fmt.Sprintf("%.2f%%", float64(n)*100/float64(of))
}

func summary(b *bytes.Buffer, r *result.Result) {
	t := r.Totals
	fmt.Fprintf(b, "%-20s%s\n", "Duration:", runDuration(r.Run.DurationS))
	fmt.Fprintf(b, "%-20s%d\n", "Total Requests:", t.Requests)
	fmt.Fprintf(b, "%-20s%d (%s)\n", "Successful:", t.Successful, pct(t.Successful, t.Requests))
	fmt.Fprintf(b, "%-20s%d (%s)\n", "Failed:", t.Failed, pct(t.Failed, t.Requests))
	fmt.Fprintf(b, "%-20s%.2f req/s%s\n\n", "Throughput:", throughput(r), unsentNote(t))
}

func errorBreakdown(b *bytes.Buffer, byClass map[string]int64) {
	c := func(cl sample.Class) int64 { return byClass[cl.String()] }
	line := func(label string, n int64, extra string) {
		fmt.Fprintf(b, "  %-19s %d%s\n", label, n, extra)
	}
	b.WriteString("Error Breakdown:\n")
	line("Rate Limited (429):", c(sample.RateLimited), "")
	line("Timeouts:", c(sample.Timeout), "")
	line("Server Errors (5xx):", c(sample.ServerError), "")
	line("Client Errors (4xx):", c(sample.ClientError), "")
	var conn int64
	var kinds []string
	for _, k := range connLabels {
		if n := c(k.class); n > 0 {
			conn += n
			kinds = append(kinds, fmt.Sprintf("%s %d", k.label, n))
		}
	}
	extra := ""
	if len(kinds) > 0 {
		extra = " (" + strings.Join(kinds, ", ") + ")"
	}
	line("Connection Errors:", conn, extra)
	line("Check Failures:", c(sample.Check), "")
	line("Capture Failures:", c(sample.Capture), "")
	line("Dropped:", c(sample.Dropped), "")
	line("Interrupted:", c(sample.Interrupted), "")
	// Only HTTP/2 servers refuse a stream unprocessed: a line of its own
	// only when some did, so HTTP/1.1 reports keep their shape.
	if n := c(sample.Refused); n > 0 {
		line("Refused:", n, " (unprocessed: REFUSED_STREAM or GOAWAY)")
	}
	// Likewise the connection-protocol outcomes of SignalR populations.
	if n := c(sample.Protocol); n > 0 {
		line("Protocol Errors:", n, " (the server broke the protocol)")
	}
	if n := c(sample.ServerClose); n > 0 {
		line("Server Closes:", n, " (the server closed the connection)")
	}
	if n := c(sample.Redirects); n > 0 {
		line("Redirects:", n, " (a loop, too many hops, or a 3xx not followed)")
	}
	if n := c(sample.Proxy); n > 0 {
		line("Proxy:", n, " (the proxy refused: 407 or CONNECT not 2xx)")
	}
	// Classes this version does not know (a newer writer's) still count as
	// failures, so they show under Other rather than vanish from the sum.
	other := c(sample.Other)
	for name, n := range byClass {
		if _, ok := sample.ParseClass(name); !ok {
			other += n
		}
	}
	line("Other:", other, "")
	b.WriteString("\n")
}

// failureList renders nonzero failure classes in report order.
func failureList(byClass map[string]int64, skip ...sample.Class) []string {
	var out []string
next:
	for _, cl := range sample.FailureClasses() {
		for _, s := range skip {
			if cl == s {
				continue next
			}
		}
		if n := byClass[cl.String()]; n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, stepLabels[cl]))
		}
	}
	var unknown []string
	for name := range byClass {
		if _, ok := sample.ParseClass(name); !ok && byClass[name] > 0 {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		out = append(out, fmt.Sprintf("%d %s", byClass[name], name))
	}
	return out
}

type group struct {
	label                        string
	requests, successful, failed int64
	byClass                      map[string]int64
}

func requestTypes(b *bytes.Buffer, steps []result.Step, lat []result.Latency) {
	if len(steps) == 0 {
		return
	}
	b.WriteString("Request Type Breakdown:\n")

	var groups []*group
	byName := map[string]*group{}
	for _, s := range steps {
		if s.Group == "" {
			continue
		}
		g := byName[s.Group]
		if g == nil {
			g = &group{label: capitalise(s.Group) + ":", byClass: map[string]int64{}}
			byName[s.Group] = g
			groups = append(groups, g)
		}
		g.requests += s.Requests
		g.successful += s.Successful
		g.failed += s.Failed
		for c, n := range s.ByClass {
			g.byClass[c] += n
		}
	}
	// Group labels are padded to a common width so their figures line up,
	// as the classic load-test report's Reads/Writes lines did.
	width := 0
	for _, g := range groups {
		width = max(width, utf8.RuneCountInString(g.label))
	}
	for _, g := range groups {
		// The seed always shows rate limited and client errors on group
		// lines; other classes follow only when present.
		parts := []string{
			fmt.Sprintf("%d total", g.requests),
			fmt.Sprintf("%d successful (%s)", g.successful, pct(g.successful, g.requests)),
			fmt.Sprintf("%d rate limited", g.byClass[sample.RateLimited.String()]),
			fmt.Sprintf("%d client errors", g.byClass[sample.ClientError.String()]),
		}
		parts = append(parts, failureList(g.byClass, sample.RateLimited, sample.ClientError)...)
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(g.label))
		fmt.Fprintf(b, "  %s%s %s\n", g.label, pad, strings.Join(parts, ", "))
	}

	names := stepNames(steps)
	for i, s := range steps {
		parts := []string{
			fmt.Sprintf("%d total", s.Requests),
			fmt.Sprintf("%d successful (%s)", s.Successful, pct(s.Successful, s.Requests)),
		}
		parts = append(parts, failureList(s.ByClass)...)
		l := lat[i]
		if l.Count > 0 {
			parts = append(parts, "p50 "+Duration(l.P50US), "p95 "+Duration(l.P95US), "p99 "+Duration(l.P99US))
		} else {
			parts = append(parts, "p50 -", "p95 -", "p99 -")
		}
		fmt.Fprintf(b, "  %s: %s\n", names[i], strings.Join(parts, ", "))
	}
	b.WriteString("\n")
}

// stepNames uses "scenario/name" only for names that more than one scenario
// uses, so the usual case reads as the plan does.
func stepNames(steps []result.Step) []string {
	scenarios := map[string]map[string]bool{}
	for _, s := range steps {
		if scenarios[s.Name] == nil {
			scenarios[s.Name] = map[string]bool{}
		}
		scenarios[s.Name][s.Scenario] = true
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
		if len(scenarios[s.Name]) > 1 {
			out[i] = s.Scenario + "/" + s.Name
		}
	}
	return out
}

func capitalise(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func latencyBlock(b *bytes.Buffer, title string, l result.Latency, empty string) {
	b.WriteString(title + "\n")
	if l.Count == 0 {
		fmt.Fprintf(b, "  (%s)\n\n", empty)
		return
	}
	rows := []struct {
		label string
		us    int64
	}{
		{"Min:", l.MinUS}, {"P50:", l.P50US}, {"P75:", l.P75US}, {"P90:", l.P90US},
		{"P95:", l.P95US}, {"P99:", l.P99US}, {"P99.9:", l.P999US}, {"Max:", l.MaxUS},
		{"Avg:", int64(math.Round(l.AvgUS))},
	}
	for _, row := range rows {
		fmt.Fprintf(b, "  %-8s%s\n", row.label, Duration(row.us))
	}
	b.WriteString("\n")
}

func thresholds(b *bytes.Buffer, ts []result.Threshold) {
	if len(ts) == 0 {
		return
	}
	b.WriteString("Thresholds:\n")
	for _, t := range ts {
		mark := "✗"
		if t.Pass && t.Error == "" {
			mark = "✓"
		}
		switch {
		case t.Error != "":
			fmt.Fprintf(b, "  %s %s (error: %s)\n", mark, t.Expr, t.Error)
		case t.Value != "":
			fmt.Fprintf(b, "  %s %s (measured %s)\n", mark, t.Expr, t.Value)
		default:
			fmt.Fprintf(b, "  %s %s\n", mark, t.Expr)
		}
	}
	b.WriteString("\n")
}

func generator(b *bytes.Buffer, g result.Generator, lag result.Latency) {
	// Results merged from segments or written by older versions may carry
	// no generator account; an all-zero line would claim a perfect one.
	if g.CPUSeconds == 0 && g.MaxRSS == 0 && lag.Count == 0 {
		return
	}
	var parts []string
	// A run of connections only sends no HTTP requests: a cost per
	// request of 0 would read as free.
	if g.CPUPerRequestUS > 0 {
		parts = append(parts, fmt.Sprintf("CPU %.1fµs/request", g.CPUPerRequestUS))
	} else {
		parts = append(parts, fmt.Sprintf("CPU %.1fs", g.CPUSeconds))
	}
	util := fmt.Sprintf("CPU util %.2f%%", g.CPUUtil*100)
	if g.Cores > 0 {
		util += " of " + plural(g.Cores, "core")
	}
	parts = append(parts, util)
	if lag.Count > 0 {
		parts = append(parts, "lag p99 "+Duration(lag.P99US))
	}
	if g.MaxRSS > 0 {
		parts = append(parts, fmt.Sprintf("max RSS %.1f MB", float64(g.MaxRSS)/1e6))
	}
	fmt.Fprintf(b, "Generator: %s\n\n", strings.Join(parts, ", "))
}

func indicators(b *bytes.Buffer, inds []result.Indicator) {
	if len(inds) == 0 {
		return
	}
	b.WriteString("Performance Indicators:\n")
	for _, in := range inds {
		icon := "⚠️"
		if in.Severity == "info" {
			icon = "ℹ️"
		}
		fmt.Fprintf(b, "  %s  %s\n", icon, in.Message)
	}
	b.WriteString("\n")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// unsentNote says, where some requests have no end on the wire, that the
// throughput leaves them out (result.Totals.Timed): the failure counts
// above hold them.
func unsentNote(t result.Totals) string {
	if n := t.Requests - t.Timed(); n > 0 {
		return fmt.Sprintf(" (%s not sent or cut off left out)", plural(int(n), "request"))
	}
	return ""
}
