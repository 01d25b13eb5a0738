package session

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/run"
)

// URLRequest is `stampede url`: one URL loaded without a plan.
type URLRequest struct {
	URL      string
	Conns    int
	Duration time.Duration
	Rate     float64
	Method   string
	Headers  []string
	Body     string
	Timeout  time.Duration
	Out      string
	Format   string // text, or json (a one-line brief for scripts)
	Open     bool   // Rate is an open-model arrival rate
	Engine   string
	// CAFile and Insecure are the in-memory plan's tls.ca_file and
	// tls.insecure (--ca-file, --insecure).
	CAFile   string
	Insecure bool
	// Redirects is how many redirects a request follows (0: the 3xx is
	// the answer); nil: the plan's default.
	Redirects *int

	// OpenBound, when set, is --open's bound on requests in flight where
	// -c was not given (derived from the rate): a default, lowered to the
	// open-files limit as a plan's own max_in_flight default is, where a
	// -c written is refused past it.
	OpenBound int
}

// URL is the one-line load test, in the spirit of wrk and hey: it builds
// a plan in memory so the measurement rules are exactly those of run.
func (pr Process) URL(r URLRequest) error {
	if err := checkEngineFlag(r.Engine); err != nil {
		return err
	}
	src, err := urlPlan(r)
	if err != nil {
		return Fail(ExitUsage, err)
	}
	p, err := plan.Parse("(url)", src, nil)
	if err != nil {
		return Fail(ExitUsage, withoutPlanPos(err))
	}
	// HTTP_PROXY and the like, as curl and k6 read them.
	if p.HTTP.Proxy, err = plan.EnvProxy(pr.LookupEnv); err != nil {
		return Fail(ExitUsage, err)
	}
	if r.Open && r.OpenBound > 0 {
		limit := openFilesLimit()
		if p.Load.MaxInFlight = fitOpenBound(r.OpenBound, limit); p.Load.MaxInFlight < r.OpenBound {
			fmt.Fprintf(pr.Stderr, "requests in flight bounded at %d, not %d, to fit the open-files limit (RLIMIT_NOFILE %d); -c chooses\n", p.Load.MaxInFlight, r.OpenBound, limit)
		}
	}
	if err := CheckFit(pr.Stderr, p, 1); err != nil {
		return err
	}
	// --ca-file and --insecure, as run gives a plan's tls section.
	tlsConf, err := tlsConfig(p)
	if err != nil {
		return err
	}
	if r.Format != "json" && r.Format != "text" {
		return Fail(ExitUsage, fmt.Errorf("--format %q: expected text or json", r.Format))
	}
	// The session gives url what run has: the Ctrl-C policy (a graceful
	// stop, then quit at once with the partial result), an atomic write
	// of -o with room set aside before any load, and run's exit codes.
	// Without -o nothing is written.
	s, err := Open(pr.options(Options{Out: r.Out, Need: resultNeed(p, 0)}))
	if err != nil {
		return err
	}
	defer s.Close()
	pr.tuneGC(p)
	oc := s.Run(&InProcess{Plan: p, Options: run.Options{Version: pr.Version, TLS: tlsConf, TLSAdvice: &urlTLSAdvice, Engine: r.Engine, MaxProcs: pr.maxProcs()}})
	if oc.Result == nil || oc.Quit {
		return oc.Err()
	}
	render := report.Text
	if r.Format == "json" {
		render = report.Brief
	}
	if err := render(pr.Stdout, oc.Result); err != nil {
		return Fail(ExitRun, err)
	}
	if oc.SaveErr == nil && r.Out != "" {
		fmt.Fprintf(pr.Stderr, "result saved to %s\n", r.Out)
	}
	return oc.Err()
}

// fitOpenBound is bound, or what one process may hold of it under the
// open-files limit after plan.ReservedFiles (at least 1), as LowerToFit
// lowers a plan's default.
func fitOpenBound(bound int, limit uint64) int {
	if uint64(bound)+plan.ReservedFiles <= limit {
		return bound
	}
	return int(max(limit, plan.ReservedFiles+1) - plan.ReservedFiles)
}

func urlPlan(r URLRequest) ([]byte, error) {
	if err := checkURLFlags(r); err != nil {
		return nil, err
	}
	step, err := urlStep(r)
	if err != nil {
		return nil, err
	}
	load, err := urlLoad(r)
	if err != nil {
		return nil, err
	}
	base, _, _ := splitURL(r.URL)
	p := map[string]any{
		"name":      "url",
		"target":    base,
		"scenarios": map[string]any{"url": map[string]any{"steps": []any{step}}},
		"load":      load,
	}
	if r.CAFile != "" || r.Insecure {
		t := map[string]any{}
		if r.CAFile != "" {
			// A plan scalar expands ${NAME}; a flag's path means it literally.
			t["ca_file"] = strings.ReplaceAll(r.CAFile, "${", "$${")
		}
		if r.Insecure {
			t["insecure"] = true
		}
		p["tls"] = t
	}
	return yaml.Marshal(p)
}

// checkURLFlags refuses, in the flags' own terms, what the in-memory plan
// would refuse at coordinates of a file the user never wrote, and what it
// would take without a word (-r -5 ran flat out).
func checkURLFlags(r URLRequest) error {
	if err := checkURLArg(r.URL); err != nil {
		return err
	}
	if r.Conns < 1 {
		return fmt.Errorf("-c must be at least 1")
	}
	if r.Duration <= 0 {
		return fmt.Errorf("-d must be positive")
	}
	if r.Rate < 0 || math.IsNaN(r.Rate) || math.IsInf(r.Rate, 0) {
		return fmt.Errorf("-r %g: expected iterations/s of 0 (as fast as answers come) or more", r.Rate)
	}
	if r.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	if ms := plan.Methods(); !slices.Contains(ms, strings.ToLower(r.Method)) {
		return fmt.Errorf("-m %q: expected one of %s", r.Method, strings.ToUpper(strings.Join(ms, ", ")))
	}
	if r.Redirects != nil && *r.Redirects < 0 {
		return fmt.Errorf("--redirects must be 0 (off) or more")
	}
	if r.CAFile != "" {
		return plan.CheckCAFile("--ca-file", r.CAFile)
	}
	return nil
}

// urlStep is the one request step: method, path, headers and body.
func urlStep(r URLRequest) (map[string]any, error) {
	_, path, shown := splitURL(r.URL)
	step := map[string]any{strings.ToLower(r.Method): path, "name": strings.ToUpper(r.Method) + " " + shown, "timeout": r.Timeout.String()}
	if r.Redirects != nil {
		step["redirects"] = *r.Redirects
	}
	if len(r.Headers) > 0 {
		h := map[string]string{}
		for _, kv := range r.Headers {
			name, value, ok := strings.Cut(kv, ":")
			if !ok {
				return nil, fmt.Errorf("-H %q: expected \"Name: value\"", kv)
			}
			h[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
		step["headers"] = h
	}
	if r.Body != "" {
		step["body"] = r.Body
	}
	return step, nil
}

// urlLoad is the load: users as fast as answers come, users paced to -r,
// or with --open an arrival rate bounded by -c requests in flight.
func urlLoad(r URLRequest) (map[string]any, error) {
	load := map[string]any{"grace": "2s"}
	stage := map[string]any{"duration": r.Duration.String()}
	switch {
	case r.Open:
		if r.Rate <= 0 {
			return nil, fmt.Errorf("--open needs -r")
		}
		stage["rate"] = fmt.Sprintf("%g/s", r.Rate)
		load["max_in_flight"] = r.Conns
	case r.Rate > 0:
		stage["users"] = r.Conns
		pace := float64(r.Conns) / r.Rate * float64(time.Second)
		if pace >= math.MaxInt64 {
			return nil, fmt.Errorf("-r %g is too low for -c %d: each user would wait over 290 years between requests", r.Rate, r.Conns)
		}
		load["pace"] = time.Duration(pace).String()
	default:
		stage["users"] = r.Conns
	}
	load["stages"] = []any{stage}
	return load, nil
}

// checkURLArg refuses a URL argument the in-memory plan could not load as
// its target, in the argument's terms rather than the plan's coordinates,
// with the URL that was most likely meant where the scheme was left out.
func checkURLArg(raw string) error {
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == "" {
		return nil
	}
	msg := fmt.Sprintf("URL %q is not an absolute http(s) URL", raw)
	if lower := strings.ToLower(raw); !strings.Contains(raw, "://") && !strings.HasPrefix(lower, "http:") && !strings.HasPrefix(lower, "https:") {
		if v, err := url.Parse("http://" + raw); err == nil && v.Host != "" {
			return fmt.Errorf("%s; did you mean %s?", msg, v)
		}
	}
	return fmt.Errorf("%s: expected one such as http://127.0.0.1:8080/path", msg)
}

// withoutPlanPos is a refusal of the in-memory plan without its
// coordinates, which name lines of a file the user never wrote.
func withoutPlanPos(err error) error {
	var pe *plan.Error
	if !errors.As(err, &pe) {
		return err
	}
	msgs := make([]string, len(pe.Problems))
	for i, p := range pe.Problems {
		msgs[i] = p.Msg
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// urlTLSAdvice names url's flags where a failed TLS check would name a
// plan's tls keys: url has no plan, and --ca-file and --insecure set them.
var urlTLSAdvice = run.TLSAdvice{
	Trust:    "give the CA that signed it with --ca-file FILE (a PEM file)",
	Skip:     "add --insecure",
	Name:     "use a host name it holds in the URL",
	Settings: "the TLS flags (--ca-file, --insecure)",
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
