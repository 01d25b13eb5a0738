package vu

import (
	"fmt"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/plan"
)

// Which driver may run a program is an allow-list: the program says what
// it needs (Needs), each driver what it supports (a FeatureSet, the event
// loop's in evloop.go), and a driver runs a program only when it supports
// every need. A feature added here is refused by every driver that has not
// declared it, so a new step feature cannot reach a driver unchecked.

// Feature is one thing a program's users need of the driver that runs them.
type Feature uint8

const (
	// FeatRequest: HTTP/1.1 request steps whose bytes are the same for
	// every user and iteration, judged on their status. Every program
	// that sends requests needs it.
	FeatRequest Feature = iota
	FeatH2C
	FeatSourceAddresses
	FeatConnCap
	FeatNoKeepAlive
	FeatConnections
	FeatData
	FeatRenewOn
	FeatNonRequestStep
	FeatDynamicOrigin
	FeatHTTPS
	FeatTemplatedURL
	FeatCapture
	FeatBodyCheck
	FeatRenderedBody
	FeatTemplatedQuery
	FeatTemplatedHeader
	FeatManyEndpoints
	// FeatHTTPSNegotiated: https:// under http.version auto or h2, where
	// the server may choose HTTP/2 by ALPN.
	FeatHTTPSNegotiated
	// FeatProxy: requests that go through a proxy (HTTP_PROXY and the
	// like, or http.proxy).
	FeatProxy
	// FeatNoRequests: a plan whose scenarios send no request (only
	// connections): a driver of HTTP users has nothing to run.
	FeatNoRequests
	// FeatPace and FeatWaves: users paced to an iteration rate, and load
	// in waves, which only goroutine users follow.
	FeatPace
	FeatWaves
	// FeatAnyAddress: a target host that does not resolve to exactly one
	// address, where a driver that resolves once per run would dial one
	// of several, or none (Driver.CheckAddr tells).
	FeatAnyAddress
	numFeatures
)

// needText says why a driver without the feature refuses a program, after
// where the program needs it.
var needText = [numFeatures]string{
	FeatRequest:         "it sends HTTP requests",
	FeatH2C:             "http.version asks for h2c",
	FeatSourceAddresses: "http.source_addresses is set",
	FeatConnCap:         "http.max_connections_per_host is set",
	FeatNoKeepAlive:     "http.connection is not keep-alive",
	FeatConnections:     "holds connections",
	FeatData:            "reads data",
	FeatRenewOn:         "renews on a status",
	FeatNonRequestStep:  "not a request step (think, script or control flow)",
	FeatDynamicOrigin:   "its URL's origin is templated",
	FeatHTTPS:           "not plain http://",
	FeatTemplatedURL:    "its URL is templated",
	FeatCapture:         "it captures",
	FeatBodyCheck:       "it checks the body",
	FeatRenderedBody:    "its body is rendered per request",
	FeatTemplatedQuery:  "its query is templated",
	FeatTemplatedHeader: "a header is templated",
	FeatManyEndpoints:   "a second endpoint",
	FeatHTTPSNegotiated: "https:// without http.version http/1.1 (ALPN may choose h2)",
	FeatProxy:           "its requests go through a proxy",
	FeatNoRequests:      "the plan sends no requests",
	FeatPace:            "users are paced",
	FeatWaves:           "the plan has waves",
	FeatAnyAddress:      "its host does not resolve to one address",
}

func (f Feature) String() string { return needText[f] }

// FeatureSet is the features a driver supports.
type FeatureSet uint64

// NewFeatureSet is the set of fs.
func NewFeatureSet(fs ...Feature) FeatureSet {
	var s FeatureSet
	for _, f := range fs {
		s |= 1 << f
	}
	return s
}

// Has reports whether f is in s.
func (s FeatureSet) Has(f Feature) bool { return s&(1<<f) != 0 }

// Without is s less f.
func (s FeatureSet) Without(f Feature) FeatureSet { return s &^ (1 << f) }

// Need is a feature a program needs and where it first does ("" for the
// whole plan, else the scenario and step); Detail, when set, says it in
// the words of the check that found it (a host's addresses).
type Need struct {
	Feature Feature
	Where   string
	Detail  string
}

func (n Need) String() string {
	what := n.Feature.String()
	if n.Detail != "" {
		what = n.Detail
	}
	return n.Where + what
}

// Driver is a driver as the choice between drivers sees it: the features
// it supports here (none where it cannot run at all: Absent says why), and
// for FeatAnyAddress, which only the target's name can tell, its check of
// the address ("" when it can dial it).
type Driver struct {
	Supports  FeatureSet
	Absent    string
	CheckAddr func(addr string) string
}

// Refusal says why d cannot run p's users ("" when it can): its absence,
// else the first need it lacks, else the address check, asked last as it
// may resolve a name. It is the one rule of which driver runs a plan.
func (p *Program) Refusal(d Driver) string {
	if d.Supports == 0 && d.Absent != "" {
		return d.Absent
	}
	if why := p.Unsupported(d.Supports); why != "" {
		return why
	}
	if d.Supports.Has(FeatAnyAddress) || d.CheckAddr == nil {
		return ""
	}
	if why := d.CheckAddr(p.LoopAddr()); why != "" {
		return Need{Feature: FeatAnyAddress, Detail: why}.String()
	}
	return ""
}

// Unsupported says why a driver supporting s cannot run p's users: the
// first need, in plan order, that s lacks ("" when it has them all).
func (p *Program) Unsupported(s FeatureSet) string {
	for _, n := range p.Needs() {
		if !s.Has(n.Feature) {
			return n.String()
		}
	}
	return ""
}

// Needs lists what p's users need of a driver, in plan order, each feature
// once, where it is first needed.
func (p *Program) Needs() []Need {
	var seen FeatureSet
	var out []Need
	need := func(f Feature, where string) {
		if !seen.Has(f) {
			seen |= NewFeatureSet(f)
			out = append(out, Need{Feature: f, Where: where})
		}
	}
	h := p.Plan.HTTP
	for _, x := range []struct {
		f  Feature
		on bool
	}{{FeatNoRequests, !p.HasRequests()}, {FeatPace, p.Plan.Load.Pace > 0}, {FeatWaves, len(p.Plan.Waves) > 0},
		{FeatH2C, h.H2C}, {FeatSourceAddresses, len(h.SourceAddresses) > 0},
		{FeatConnCap, h.MaxConnsPerHost > 0}, {FeatNoKeepAlive, h.Reuse != plan.ReuseKeepAlive}} {
		if x.on {
			need(x.f, "")
		}
	}
	var ep *httpc.Endpoint
	for _, sc := range p.Scenarios {
		where := fmt.Sprintf("scenario %q ", sc.Name)
		if sc.Connection != nil {
			need(FeatConnections, where)
		}
		if len(sc.DataUsed) > 0 {
			need(FeatData, where)
		}
		if sc.Flow.RenewOn != nil {
			need(FeatRenewOn, where)
		}
		for _, st := range sc.Steps {
			stepWhere := fmt.Sprintf("scenario %q step %q: ", sc.Name, st.Name)
			for _, f := range stepNeeds(st) {
				need(f, stepWhere)
			}
			if st.Kind != plan.StepRequest || st.endpoint == nil {
				continue
			}
			if st.endpoint.Scheme == "https" && h.Version != plan.VersionHTTP1 {
				need(FeatHTTPSNegotiated, stepWhere)
			}
			if h.Proxy.Proxied(st.endpoint.Scheme, st.endpoint.Host) {
				need(FeatProxy, stepWhere)
			}
			if ep == nil {
				ep = st.endpoint
			} else if ep != st.endpoint {
				need(FeatManyEndpoints, stepWhere)
			}
		}
	}
	return out
}

// stepNeeds is what one step needs of a driver.
func stepNeeds(st *Step) []Feature {
	if st.Kind != plan.StepRequest {
		return []Feature{FeatNonRequestStep}
	}
	fs := []Feature{FeatRequest}
	add := func(f Feature, on bool) {
		if on {
			fs = append(fs, f)
		}
	}
	if st.dynamicURL || st.endpoint == nil {
		return append(fs, FeatDynamicOrigin)
	}
	add(FeatHTTPS, st.endpoint.Scheme != "http")
	add(FeatTemplatedURL, !st.URL.Static())
	add(FeatCapture, len(st.Captures) > 0)
	add(FeatBodyCheck, st.keepBody || len(st.Expect.BodyContains) > 0 || len(st.Expect.JSON) > 0)
	add(FeatRenderedBody, st.Body != nil && !st.Body.Static() || st.Gzip)
	for _, q := range st.Query {
		if !q.Value.Static() {
			add(FeatTemplatedQuery, true)
			break
		}
	}
	for _, h := range st.Headers {
		if !h.Value.Static() {
			add(FeatTemplatedHeader, true)
			break
		}
	}
	return fs
}
