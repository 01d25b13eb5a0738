package plan

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	defaultTimeout     = 30 * time.Second
	defaultGrace       = 5 * time.Second
	defaultMaxInFlight = 10000
	// jsonBudget bounds the nodes a json body may expand to, because YAML
	// aliases can make a small file describe an enormous (or cyclic) value.
	jsonBudget = 100000
	jsonDepth  = 100
	// entryBudget bounds the mapping and list entries read in all, for the
	// same reason: aliases at each level of a plan multiply.
	entryBudget = 1000000
)

var (
	topKeys      = []string{"name", "target", "defaults", "tls", "vars", "data", "tenants", "scenarios", "load", "thresholds"}
	methods      = []string{"get", "post", "put", "patch", "delete", "head"}
	requestKeys  = append(append([]string{}, methods...), "name", "group", "headers", "query", "json", "form", "body", "timeout", "redirects", "capture", "expect")
	bodyKeys     = []string{"json", "form", "body"}
	reservedHelp = "tenant, vu, iter, uuid, now_ms, rand_int, vars and data"
)

// Parse compiles plan text. file names the plan in error messages and is the
// base for relative data paths. lookupEnv resolves ${NAME}; nil means no
// variable is set. The error, if any, is an *Error.
func Parse(file string, src []byte, lookupEnv func(string) (string, bool)) (*Plan, error) {
	return parse(file, src, lookupEnv, openFile)
}

type parser struct {
	file   string
	dir    string
	src    []byte
	lines  [][]byte
	lookup func(string) (string, bool)
	open   func(string) (io.ReadCloser, error)
	probs  []Problem
	plan   *Plan
	data   map[string]*DataSource
	// tenants is set when the plan has a tenants key at all, valid or not,
	// so a bad count does not also fail every {{ tenant }}.
	tenants bool
	// defaultHeaderData is the data the default headers read, which every
	// scenario then reads too.
	defaultHeaderData map[int]bool
	budget            int
	entries           int
	// hinted records, per mapping, the keys an unknown key was taken for,
	// so "did you mean stages?" is not followed by "stages is missing".
	hinted      map[*yaml.Node]map[string]bool
	relative    []Pos
	relativeURL string
	// secrets are the values read from the environment and the target's
	// password; readingTarget leaves the target's own text out of them
	// (secrets.go).
	secrets       []string
	envRefs       map[string]string // value → ${NAME}, for hideEnv
	readingTarget bool
	targetAuth    string
	// setupAt is where the setup declares each of its captures, to name
	// both places when a later capture takes one's name (declare).
	setupAt map[string]Pos
	// loadOpts says where data files are and which share of them to keep (data.go).
	loadOpts LoadOptions
}

func parse(file string, src []byte, lookup func(string) (string, bool), open func(string) (io.ReadCloser, error)) (*Plan, error) {
	return parseOpts(file, src, lookup, open, LoadOptions{})
}

func parseOpts(file string, src []byte, lookup func(string) (string, bool), open func(string) (io.ReadCloser, error), o LoadOptions) (*Plan, error) {
	p := &parser{
		loadOpts: o,
		file:     file,
		dir:      filepath.Dir(file),
		src:      src,
		open:     open,
		data:     map[string]*DataSource{},
		budget:   jsonBudget,
		entries:  entryBudget,
		plan: &Plan{
			File:   file,
			Source: bytes.Clone(src),
			Vars:   map[string]string{},
		},
	}
	p.lookup = p.recordingLookup(lookup)
	p.open = p.recordingOpen(open)
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, &Error{Problems: yamlProblems(file, src, err)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{Problems: []Problem{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "empty plan: expected a mapping with at least scenarios and load"}}}
	}
	p.root(doc.Content[0])
	p.resolveProxy(lookup)   // proxy.go
	p.checkRedirectExpects() // proxy.go
	if len(p.probs) > 0 {
		sortProblems(p.probs)
		return nil, &Error{Problems: p.probs}
	}
	return p.plan, nil
}

func (p *parser) root(n *yaml.Node) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errf(n, "expected a mapping of plan keys (%s), found %s", strings.Join(topKeys, ", "), kindName(n))
		return
	}
	f := p.fields(n, "the plan", allTopKeys())
	pl := p.plan

	pl.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	if kv, ok := f["name"]; ok {
		if s, ok := p.text(kv.v, "name"); ok {
			pl.Name = s
		}
	}
	if kv, ok := f["target"]; ok {
		p.target(kv)
	}
	if kv, ok := f["vars"]; ok {
		p.vars(kv.v)
	}
	if kv, ok := f["data"]; ok {
		p.dataSources(kv.v)
	}
	if kv, ok := f["tenants"]; ok {
		p.tenantPool(kv.v)
	}
	pl.Defaults.Timeout = defaultTimeout
	if kv, ok := f["defaults"]; ok {
		p.defaults(kv.v)
	}
	if kv, ok := f["tls"]; ok {
		p.tls(kv.v)
	}
	p.setup(f) // workflow.go: before the scenarios, which read its captures
	if kv, ok := f["scenarios"]; ok {
		p.scenarios(kv.v)
	} else if p.missing(n, "scenarios") {
		p.errf(n, `missing key "scenarios": expected a mapping of scenario names to {weight, steps}`)
	}
	if kv, ok := f["load"]; ok {
		p.load(kv.v)
	} else if p.missing(n, "load") {
		p.errf(n, `missing key "load": expected load: {stages: [{duration: 1m, users: 10}]} or the rate form`)
	}
	if kv, ok := f["thresholds"]; ok {
		p.thresholds(kv.v)
	}
	for _, ext := range topExtensions {
		if kv, ok := f[ext.key]; ok {
			ext.parse(p, kv.v)
		}
	}
	p.finishTenants()
	if pl.Target == "" && len(p.relative) > 0 && p.missing(n, "target") {
		p.errAt(p.relative[0], "relative URL %s needs a target: add target: http://host:port (or demo) at the top level", q(p.relativeURL))
	}
	pl.usesTarget = len(p.relative) > 0
	p.finishTarget()
	p.finishSecretHeaders()
	p.finishSecrets()
	p.checkPopulation(f)
	p.checkThresholds()
}

func sprintf(format string, args ...any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

func compileRegex(s string) (*regexp.Regexp, string) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	}
	return re, ""
}
