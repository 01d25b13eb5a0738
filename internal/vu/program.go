// Package vu runs virtual users of every scenario kind: an HTTP user one
// iteration at a time, rendering each request from templates compiled at
// load time, sending it, checking and capturing from the answer, and
// recording the outcome; and a connection user (ConnUser), the SignalR
// handshake and hub calls or the WebSocket script a held connection runs,
// with the same rendering, captures, checks and failure texts. Which
// driver runs them (goroutines, the event loop, the connection driver) is
// the run's choice, by the features a program needs.
package vu

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// Program is a plan prepared for running: endpoints resolved, steps
// numbered for the metrics, feeders created.
type Program struct {
	Plan      *plan.Plan
	Scenarios []*Scenario
	Feeders   []*Feeder
	Steps     []metrics.StepInfo
	// Seed feeds every user's random draws (userRand); the run sets it
	// before making users.
	Seed uint64
	// order assigns scenarios to users and arrivals by weight, spread
	// evenly (smooth weighted round robin), so any prefix of users is mixed
	// as the weights say.
	order       []int
	maxCaptures int
	userAgent   []byte
	tlsConfig   *tls.Config
	// maxLoops is the most loop slots a scenario needs (flow.go).
	maxLoops int
	// globals are the setup's captures every user reads (flow.go).
	globals  []string
	renewals atomic.Int64
	// ScriptMemoryHit, when set, hears that a script call was stopped for
	// growing the memory past its budget (scriptmem.go): the run stops.
	ScriptMemoryHit func(msg string)
}

// Scenario is a plan scenario with its steps compiled.
type Scenario struct {
	*plan.Scenario
	Index    int
	Steps    []*Step
	firstReq int // metrics id of the first request step
}

// Step is a compiled step.
type Step struct {
	*plan.Step
	ID int // metrics step id; -1 for think steps
	// hopID is the metrics id its redirect hops are counted under
	// (redirect.go); -1 when it follows none.
	hopID int
	// failID is the request step a control step's failure is counted
	// against: the next one, else the last before it (flow.go).
	failID   int
	endpoint *httpc.Endpoint
	// dynamicURL is set when scheme or host come from a template: the URL
	// is then parsed per request.
	dynamicURL bool
	keepBody   bool
	hasCT      bool
	hasUA      bool
	// secretHeaders index the headers whose values are noted as sent
	// (secrets.go).
	secretHeaders []int
	// secretCaptures: a capture of the step is a credential, noted before
	// the step's checks run (secrets.go).
	secretCaptures bool
}

// Compile prepares p to run against base, the target's base URL; ""
// for a plan without a target, whose every URL is absolute (the plan
// refuses a path without one).
func Compile(p *plan.Plan, base string, userAgent string, tlsConf *tls.Config) (*Program, error) {
	prog := &Program{Plan: p, userAgent: []byte(userAgent), tlsConfig: tlsConf}
	var baseEP *httpc.Endpoint
	if base != "" {
		var err error
		if baseEP, err = endpointOf(base, tlsConf); err != nil {
			return nil, fmt.Errorf("target %q: %w", base, err)
		}
	}
	endpoints := map[string]*httpc.Endpoint{}
	for _, ds := range p.Data {
		prog.Feeders = append(prog.Feeders, NewFeeder(ds))
	}
	weights := make([]int, len(p.Scenarios))
	for si, ps := range p.Scenarios {
		sc := &Scenario{Scenario: ps, Index: si, firstReq: -1}
		if ps.Connection == nil {
			// Connection scenarios (WebSocket, SignalR) run as populations
			// of their own (run/connections.go), never as HTTP users.
			weights[si] = ps.Weight
		}
		if ps.Captures > prog.maxCaptures {
			prog.maxCaptures = ps.Captures
		}
		prog.maxLoops = max(prog.maxLoops, ps.Flow.Loops)
		for _, st := range ps.Steps {
			cs := &Step{Step: st, ID: -1, hopID: -1}
			if st.Kind == plan.StepRequest {
				cs.ID = len(prog.Steps)
				if sc.firstReq < 0 {
					sc.firstReq = cs.ID
				}
				prog.Steps = append(prog.Steps, metrics.StepInfo{Scenario: ps.Name, Name: st.Name, Group: st.Group})
				if err := cs.resolve(baseEP, endpoints, tlsConf); err != nil {
					return nil, fmt.Errorf("%s:%d:%d: %w", st.Pos.File, st.Pos.Line, st.Pos.Col, err)
				}
				cs.keepBody = st.KeepBody || len(st.Expect.BodyContains) > 0 || len(st.Expect.JSON) > 0
				for _, c := range st.Captures {
					if c.Kind != plan.CaptureHeader {
						cs.keepBody = true
					}
				}
				cs.secretHeaders = secretHeaderIndexes(p, st)
				for _, c := range st.Captures {
					cs.secretCaptures = cs.secretCaptures || c.Secret
				}
				for _, h := range st.Headers {
					cs.hasCT = cs.hasCT || strings.EqualFold(h.Name, "Content-Type")
					cs.hasUA = cs.hasUA || strings.EqualFold(h.Name, "User-Agent")
				}
			}
			sc.Steps = append(sc.Steps, cs)
		}
		setFailIDs(sc.Steps)
		prog.Scenarios = append(prog.Scenarios, sc)
	}
	prog.order = smoothOrder(weights)
	prog.addHopRows()
	return prog, nil
}

// addHopRows gives each request step that follows redirects a row of its
// own for the hops, after the plan's steps, so the step's row holds only
// its final answers (what the step means) while every hop stays a
// counted, timed request of the run.
func (p *Program) addHopRows() {
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			if st.ID < 0 || p.Plan.HTTP.RedirectLimit(st.Step) == 0 {
				continue
			}
			st.hopID = len(p.Steps)
			p.Steps = append(p.Steps, metrics.StepInfo{Scenario: sc.Name, Name: HopRowName(st.Name), Group: st.Group, Hops: true})
		}
	}
}

// HopRowName names the row a step's redirect hops are counted under.
func HopRowName(step string) string { return step + " ↪ redirect" }

// SetSegment makes the feeders hand out segment index of count's stripe
// of every data source (rows index, index+count, ...), so the segments of
// a distributed run never take the same unique row.
func (p *Program) SetSegment(index, count int) {
	if count < 1 {
		index, count = 0, 1
	}
	for _, f := range p.Feeders {
		f.Stride, f.Offset = int64(count), int64(index)
	}
}

// HasRequests reports whether any scenario sends requests; a plan of
// connection scenarios only starts no HTTP users.
func (p *Program) HasRequests() bool { return len(p.order) > 0 }

// ScenarioFor returns the scenario of user or arrival number k (from 0).
func (p *Program) ScenarioFor(k int64) *Scenario {
	return p.Scenarios[p.order[k%int64(len(p.order))]]
}

// ScenarioCycle is the period of ScenarioFor: users or arrivals k and
// k+ScenarioCycle() run the same scenario.
func (p *Program) ScenarioCycle() int { return len(p.order) }

// HasThink reports whether the scenario has think steps.
func (s *Scenario) HasThink() bool {
	for _, st := range s.Steps {
		if st.Kind == plan.StepThink {
			return true
		}
	}
	return false
}

// FirstRequestStep is the metrics id a dropped arrival of scenario s is
// counted against.
func (s *Scenario) FirstRequestStep() int { return s.firstReq }

func (s *Step) resolve(base *httpc.Endpoint, cache map[string]*httpc.Endpoint, tlsConf *tls.Config) error {
	src := s.URL.Source
	if strings.HasPrefix(src, "/") {
		s.endpoint = base
		return nil
	}
	// An absolute URL whose scheme and host are literal text resolves once.
	if len(s.URL.Parts) > 0 && s.URL.Parts[0].Kind == plan.PartLiteral {
		lit := s.URL.Parts[0].Literal
		if i := strings.Index(lit, "://"); i > 0 {
			rest := lit[i+3:]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				origin := lit[:i+3+j]
				ep, ok := cache[origin]
				if !ok {
					var err error
					if ep, err = endpointOf(origin, tlsConf); err != nil {
						return fmt.Errorf("url %q: %w", src, err)
					}
					cache[origin] = ep
				}
				s.endpoint = ep
				return nil
			}
		}
	}
	s.dynamicURL = true
	return nil
}

func EndpointOf(raw string) (*httpc.Endpoint, error) { return endpointOf(raw, nil) }

func endpointOf(raw string, tlsConf *tls.Config) (*httpc.Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme must be http or https, found %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("no host in %q", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	ep := &httpc.Endpoint{Scheme: u.Scheme, Addr: addr, Host: u.Host}
	if u.Scheme == "https" {
		ep.TLS = tlsConf
	}
	return ep, nil
}

// smoothOrder spreads scenario indexes by weight so that every window of
// the sequence is as close to the weights as integers allow (the smooth
// weighted round robin nginx uses for upstreams).
func smoothOrder(weights []int) []int {
	total := 0
	for _, w := range weights {
		total += w
	}
	cur := make([]int, len(weights))
	out := make([]int, 0, total)
	for len(out) < total {
		best := -1
		for i, w := range weights {
			if w == 0 { // a connection scenario
				continue
			}
			cur[i] += w
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out = append(out, best)
	}
	return out
}

// setFailIDs points each control step at the request step its failure is
// counted against: the next request step, else the last one before it.
func setFailIDs(steps []*Step) {
	next := -1
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Kind == plan.StepRequest {
			next = steps[i].ID
		}
		steps[i].failID = next
	}
	last := -1
	for _, st := range steps {
		if st.Kind == plan.StepRequest {
			last = st.ID
		}
		if st.failID < 0 {
			st.failID = last
		}
	}
}
