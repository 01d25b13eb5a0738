package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newURLCmd) }

// newURLCmd is the one-line load test, in the spirit of wrk and hey: one
// URL, N connections, a duration, optionally a total rate. It builds a plan
// in memory so the measurement rules are exactly those of `run`.
func newURLCmd() *cobra.Command {
	var (
		conns    int
		dur      time.Duration
		rate     float64
		method   string
		headers  []string
		body     string
		timeout  time.Duration
		out      string
		format   string
		openRate bool
	)
	cmd := &cobra.Command{
		Use:   "url URL",
		Short: "Load one URL: -c connections for -d, at full speed or at -r requests/s",
		Long: `Load one URL without writing a plan.

Without -r each of the -c users sends its next request as soon as the last
one is answered (closed model, full speed). With -r the -c users are paced
so that together they send -r requests/s, holding -c connections, and
latency counts from each request's scheduled time (no coordinated
omission). With --open the rate is an open-model arrival rate and -c bounds
requests in flight.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := urlPlan(args[0], conns, dur, rate, method, headers, body, timeout, openRate)
			if err != nil {
				return fail(exitUsage, err)
			}
			p, err := plan.Parse("(url)", src, nil)
			if err != nil {
				return fail(exitUsage, err)
			}
			if err := checkFit(p, 1); err != nil {
				return err
			}
			if format != "json" && format != "text" {
				return fail(exitUsage, fmt.Errorf("--format %q: expected text or json", format))
			}
			// The session gives url what run has: the Ctrl-C policy (a
			// graceful stop, then quit at once with the partial result), an
			// atomic write of -o with room set aside before any load, and
			// run's exit codes. Without -o nothing is written.
			stderr := cmd.ErrOrStderr()
			s, err := session.Open(session.Options{Out: out, Need: resultNeed(p, 0), Stderr: stderr})
			if err != nil {
				return err
			}
			defer s.Close()
			oc := s.Run(&session.InProcess{Plan: p, Options: run.Options{Version: version, Engine: engineChoice}})
			if oc.Result == nil || oc.Quit {
				return oc.Err()
			}
			var perr error
			if format == "json" {
				perr = brief(cmd.OutOrStdout(), oc.Result)
			} else {
				perr = report.Text(cmd.OutOrStdout(), oc.Result)
			}
			if perr != nil {
				return fail(exitRun, perr)
			}
			if oc.SaveErr == nil && out != "" {
				fmt.Fprintf(stderr, "result saved to %s\n", out)
			}
			return oc.Err()
		},
	}
	f := cmd.Flags()
	f.IntVarP(&conns, "connections", "c", 50, "users (connections)")
	f.DurationVarP(&dur, "duration", "d", 10*time.Second, "how long to send")
	f.Float64VarP(&rate, "rate", "r", 0, "total requests/s (0: as fast as answers come)")
	f.BoolVar(&openRate, "open", false, "treat -r as an open-model arrival rate (-c bounds requests in flight)")
	f.StringVarP(&method, "method", "m", "GET", "HTTP method")
	f.StringArrayVarP(&headers, "header", "H", nil, `request header "Name: value" (repeatable)`)
	f.StringVar(&body, "body", "", "request body")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "per-request timeout")
	f.StringVarP(&out, "out", "o", "", "also save the result JSON here")
	f.StringVar(&format, "format", "text", "summary format: text, or json (a one-line brief for scripts)")
	addEngineFlag(f)
	return cmd
}

func urlPlan(target string, conns int, dur time.Duration, rate float64, method string, headers []string, body string, timeout time.Duration, open bool) ([]byte, error) {
	if conns < 1 {
		return nil, fmt.Errorf("-c must be at least 1")
	}
	if dur <= 0 {
		return nil, fmt.Errorf("-d must be positive")
	}
	base, path, shown := splitURL(target)
	step := map[string]any{strings.ToLower(method): path, "name": strings.ToUpper(method) + " " + shown, "timeout": timeout.String()}
	if len(headers) > 0 {
		h := map[string]string{}
		for _, kv := range headers {
			name, value, ok := strings.Cut(kv, ":")
			if !ok {
				return nil, fmt.Errorf("-H %q: expected \"Name: value\"", kv)
			}
			h[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
		step["headers"] = h
	}
	if body != "" {
		step["body"] = body
	}
	load := map[string]any{"grace": "2s"}
	stage := map[string]any{"duration": dur.String()}
	switch {
	case open:
		if rate <= 0 {
			return nil, fmt.Errorf("--open needs -r")
		}
		stage["rate"] = fmt.Sprintf("%g/s", rate)
		load["max_in_flight"] = conns
	case rate > 0:
		stage["users"] = conns
		load["pace"] = time.Duration(float64(conns) / rate * float64(time.Second)).String()
	default:
		stage["users"] = conns
	}
	load["stages"] = []any{stage}
	p := map[string]any{
		"name":      "url",
		"target":    base,
		"scenarios": map[string]any{"url": map[string]any{"steps": []any{step}}},
		"load":      load,
	}
	return yaml.Marshal(p)
}

// splitURL splits a URL into the plan's target (scheme, credentials and
// host: a target has no query) and the step's path with the query, and
// gives the URL as summaries may show it, without the credentials (the
// plan sends those as Basic authentication). A URL that does not parse is
// left whole for the plan to refuse with its own message.
func splitURL(raw string) (target, path, shown string) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return raw, raw, raw
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	// A plan scalar expands ${NAME}; a URL means it literally.
	path = strings.ReplaceAll(path, "${", "$${")
	origin := &url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}
	u.User, u.Fragment, u.RawFragment = nil, "", ""
	return origin.String(), path, strings.ReplaceAll(u.String(), "${", "$${")
}

// brief prints one JSON line with the figures benchmark scripts compare.
func brief(w io.Writer, r *result.Result) error {
	rps := 0.0
	if r.Run.DurationS > 0 {
		rps = float64(r.Totals.Requests) / r.Run.DurationS
	}
	l := r.Totals.LatencyAll
	return json.NewEncoder(w).Encode(map[string]any{
		"rps": rps, "requests": r.Totals.Requests, "errors": r.Totals.Failed,
		"p50_ms": float64(l.P50US) / 1e3, "p90_ms": float64(l.P90US) / 1e3, "p99_ms": float64(l.P99US) / 1e3, "max_ms": float64(l.MaxUS) / 1e3,
		"cpu_us_per_request": r.Generator.CPUPerRequestUS, "lag_p99_us": r.Generator.Lag.P99US, "max_rss_bytes": r.Generator.MaxRSS,
	})
}
