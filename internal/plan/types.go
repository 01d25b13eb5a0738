package plan

import (
	"regexp"
	"slices"
	"time"
)

// Pos is a place in a plan file, 1-based, for error messages.
type Pos struct {
	File string
	Line int
	Col  int
}

// Plan is a loaded, validated and compiled test plan. Everything the engine
// needs at run time is resolved here, so nothing is parsed on the hot path.
type Plan struct {
	Name string
	File string
	// Seed, when set, fixes the run's random draws (seed.go); nil: each
	// run draws its own.
	Seed *uint64
	// Source is the plan text with ${ENV} references left unexpanded, so a
	// result file never carries a secret that came from the environment.
	Source []byte
	// Target is the base URL without a trailing slash and without the
	// user:password the plan may give (those are sent as Basic
	// authentication), or "demo" for the built-in demo service; "" when
	// every step has an absolute URL. Relative step URLs have its path
	// joined to them already.
	Target    string
	TargetPos Pos
	// usesTarget: some URL is a path, sent to the target (UsesTarget).
	usesTarget bool
	// files are the files read as the plan loaded (Files).
	files    []string
	Defaults Defaults
	TLS      TLS
	Vars     map[string]string
	Data     []*DataSource
	Tenants  int // 0 when the plan has no tenant pool
	// Waves split the tenant pool into groups whose load profiles are
	// shifted in time (tenants.go); nil when the whole pool runs together.
	Waves     []Wave
	Scenarios []*Scenario
	Load      Load
	// Thresholds are kept as written; package gate parses and evaluates them.
	Thresholds []Located
	HTTP       HTTPOptions
	// Gates is the plan's scaling gates (gates.go); nil without a gates key.
	Gates *Gates
	// Monitors are the server-side metric sources (monitors.go).
	Monitors []MonitorSpec
	// Setup and Teardown run once before and after the load, as one
	// user each (workflow.go); nil without them.
	Setup, Teardown *Scenario
	// redactForms is what Redact hides (secrets.go), with the credentials
	// the run notes as it sends them (sent, sentsecrets.go).
	redactForms []string
	sent        *sentSecrets
	// SecretHeaders are the lower-case names secret_headers adds to the
	// credential headers (secretheaders.go).
	SecretHeaders []string
	// maxInFlightPos is where max_in_flight was written, if it was.
	maxInFlightPos Pos
	// stagePos is where each stage of the load was written, by index; nil
	// once the stages are made rather than read (waves, levels).
	stagePos []Pos
	// wavesPos is where the first tenant wave was written.
	wavesPos Pos
	// madePos stands for the stages the plan made itself (waves, a gate's
	// level), which were written nowhere: where what made them was.
	madePos Pos
}

// Located is a string value with the place it was written.
type Located struct {
	Value string
	Pos   Pos
}

// Defaults apply to every request step unless the step overrides them.
type Defaults struct {
	Headers []Header
	Timeout time.Duration // default 30s
}

// TLS configures https targets.
type TLS struct {
	CAFile   string
	CertFile string
	KeyFile  string
	Insecure bool
	// ServerName overrides SNI and the name the certificate is checked for.
	ServerName string
}

// Pick is how a data source hands out rows.
type Pick uint8

const (
	// PickSequential hands rows out in file order, wrapping at the end.
	PickSequential Pick = iota
	// PickUnique hands every row out once across the whole run; when the
	// rows run out the run stops starting new iterations (see Run).
	PickUnique
	// PickRandom hands out a uniformly random row each time.
	PickRandom
)

func (p Pick) String() string {
	return [...]string{"sequential", "unique", "random"}[p]
}

// DataSource is a CSV file loaded in memory.
type DataSource struct {
	Name    string
	Index   int // position in Plan.Data; templates refer to rows by it
	File    string
	Pick    Pick
	Columns []string
	Rows    [][]string
	Pos     Pos
	// ByTenant names the column that partitions rows by tenant id; a user
	// of tenant t then gets only TenantRows[t] (tenants.go).
	ByTenant    string
	TenantRows  map[int][][]string
	byTenantPos Pos
	// TotalRows is the file's count of data rows; ShareIndex of ShareCount,
	// when ShareCount > 1, says Rows holds only that segment's stripe of
	// them (LoadOptions, data.go).
	TotalRows              int
	ShareIndex, ShareCount int
}

// Scenario is one kind of user.
type Scenario struct {
	Name   string
	Weight int // default 1
	Steps  []*Step
	// Captures is the number of capture slots a user of this scenario needs.
	Captures     int
	CaptureNames []string
	// DataUsed lists the data sources (by index) the scenario's templates
	// read; one row of each is taken per iteration.
	DataUsed []int
	Pos      Pos
	// Connection is set for scenarios that hold persistent connections
	// (WebSocket, SignalR) instead of looping request steps.
	Connection *ConnectionSpec
	// PerTenant > 0 runs this many users of the scenario per tenant
	// (tenants.go), instead of a weighted share of the stage users.
	PerTenant    int
	perTenantPos Pos
	// Flow is the scenario's once steps, renewal and loops (workflow.go).
	Flow ScenarioFlow
}

// StepKind tells request steps from think steps.
type StepKind uint8

const (
	StepRequest StepKind = iota
	StepThink
)

// Step is one action of a scenario.
type Step struct {
	Kind  StepKind
	Name  string // metric key; default "METHOD /path/template"
	Group string // optional report group such as "reads" or "writes"
	Pos   Pos

	// Request steps.
	Method  string
	URL     *Template // absolute, or a path joined to Plan.Target
	Query   []Pair
	Headers []Header // defaults merged in, step values win
	Body    *Template
	// ContentType is set when the body kind implies one (json, form,
	// multipart, a body_file's extension).
	ContentType string
	// StaticBody, when set, is the whole body, finished at load and
	// shared by every user (body.go); Body is then nil. Gzip asks for the
	// rendered Body to be compressed per request.
	StaticBody []byte
	Gzip       bool
	Timeout    time.Duration
	// Redirects is the step's redirects key (nil: the plan's;
	// HTTPOptions.RedirectLimit).
	Redirects *int
	Captures  []Capture
	Expect    Expect

	// Think steps.
	ThinkMin, ThinkMax time.Duration
	// Flow is set on control steps (workflow.go).
	Flow *Flow
	// Dist, when set, draws the think time instead (think.go); ThinkMin
	// and ThinkMax then both hold its mean.
	Dist *ThinkDist

	// Script steps (script.go). KeepBody is set on the request a script
	// step reads the answer of.
	Script   *Script
	KeepBody bool
}

// Header is one request header; the value may be templated.
type Header struct {
	Name  string
	Value *Template
}

// Pair is a query parameter. Name and the rendered Value are raw text: the
// engine query-escapes both.
type Pair struct {
	Name  string
	Value *Template
}

// CaptureKind says where a capture looks.
type CaptureKind uint8

const (
	CaptureJSON CaptureKind = iota
	CaptureRegex
	CaptureHeader
)

// Capture takes a value from a response into a slot of the user's state.
type Capture struct {
	Name string
	Slot int
	Kind CaptureKind
	// JSONPath is the dotted path split in parts; numeric parts index arrays.
	JSONPath []string
	Regex    *regexp.Regexp // first submatch if it has one, else the match
	Header   string
	Pos      Pos
	// Secret: the value is a credential (secret: true, or it feeds a
	// secret header): hidden from every message once captured.
	Secret bool
}

// StatusMatch accepts one code, or a class such as 2xx (Code = 0, Class = 2).
type StatusMatch struct {
	Code  int
	Class int
}

// Matches reports whether code is accepted.
func (m StatusMatch) Matches(code int) bool {
	if m.Code != 0 {
		return m.Code == code
	}
	return code/100 == m.Class
}

// JSONExpect requires the value at a JSON path to equal Value (compared as
// the JSON text of a scalar, strings unquoted).
type JSONExpect struct {
	Path  []string
	Value string
}

// Expect holds a step's checks. An empty Status list accepts any status
// below 400.
type Expect struct {
	Status       []StatusMatch
	BodyContains []string
	JSON         []JSONExpect
}

// UsesTarget reports whether the plan sends anything to its target: a
// step or connection URL written as a path. One whose URLs are all
// absolute sends it nothing, so the run neither needs nor checks it.
func (pl *Plan) UsesTarget() bool { return pl.usesTarget }

// Files are the files the plan read as it loaded, as they were opened
// (resolved against the plan's directory): data sources, TLS files,
// body_file and multipart parts. A copy of the plan elsewhere (a
// Kubernetes segment) needs every one of them to load.
func (pl *Plan) Files() []string { return slices.Clone(pl.files) }
