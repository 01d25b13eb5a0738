// Package jmx converts Apache JMeter test plans (.jmx) into stampede plans:
// thread groups into load stages, HTTP samplers with their defaults and
// header managers into request steps, CSV data sets into data sources,
// extractors into captures, assertions into expect, timers into think
// steps. What has no equivalent is listed, with its place in the test
// tree, in the plan's header comment.
package jmx

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Options shape a conversion.
type Options struct {
	// Source names the .jmx in the plan's header comment.
	Source string
	// Name is the plan's name (default: the test plan's name).
	Name string
	// Duration is how long a thread group that runs a number of loops
	// (JMeter's default, without a scheduler) is held: a plan's load is
	// timed, not counted (default 1m).
	Duration time.Duration
	// ReadFile reads a file the .jmx names, relative to it (a CSV data
	// set's header row when the set names no variables); nil reads none.
	ReadFile func(name string) ([]byte, error)
	// DataDir is the .jmx's directory as seen from the plan's, joined to
	// the data files' relative names (which JMeter reads relative to the
	// .jmx, and a plan relative to itself); "" when they are one.
	DataDir string
}

// Result says what a conversion made and what it left out.
type Result struct {
	// Samplers is the count of HTTP samplers seen, Steps of request steps
	// written.
	Samplers, Steps int
	Target          string
	// Skipped lists what was not converted: "TestPlan/Thread Group/If
	// Controller "x": why".
	Skipped []string
	// Notes say how something was converted where the plan differs.
	Notes []string
	// Env are the environment variables the plan reads (JMeter
	// properties), with their defaults.
	Env []string
}

// conv holds one conversion's state.
type conv struct {
	o        Options
	res      Result
	vars     map[string]string // user-defined variables: their plan text
	captures map[string]string // extracted variables: their capture names
	columns  map[string]string // CSV columns: "source.column"
	env      map[string]string
	// required are the environment variables without a default the
	// plan reads: the loader refuses to run it until they are set.
	required map[string]bool
	secrets  map[string]string // the variables of Azure secrets: their names
	// quiet > 0 keeps a trial conversion of text off the lists.
	quiet   int
	sources []*dataSource
	target  string
	lbrace  bool
	seen    map[string]bool
	// setup and teardown are the setUp and tearDown thread groups' steps.
	setup, teardown []*yaml.Node
	defaultHeaders  *yaml.Node
}

func (c *conv) skip(where, why string) {
	line := where + ": " + why
	if c.quiet == 0 && !c.seen[line] {
		c.seen[line] = true
		c.res.Skipped = append(c.res.Skipped, line)
	}
}

func (c *conv) note(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if c.quiet == 0 && !c.seen[line] {
		c.seen[line] = true
		c.res.Notes = append(c.res.Notes, line)
	}
}

// Convert converts a .jmx file's contents into a plan, checked by the plan
// loader before it is returned.
func Convert(data []byte, o Options) ([]byte, Result, error) {
	if o.Duration <= 0 {
		o.Duration = time.Minute
	}
	root, err := parseTree(data)
	if err != nil {
		return nil, Result{}, err
	}
	c := &conv{
		o: o, vars: map[string]string{}, captures: map[string]string{}, columns: map[string]string{},
		env: map[string]string{}, required: map[string]bool{}, secrets: map[string]string{}, seen: map[string]bool{},
	}
	if c.o.Name == "" {
		c.o.Name = root.name
	}
	if c.o.Name == "" {
		c.o.Name = "jmeter"
	}
	c.collect(root)
	scens, load, err := c.threadGroups(root)
	if err != nil {
		return nil, c.res, err
	}
	for k, v := range c.env {
		c.res.Env = append(c.res.Env, k+"="+v)
	}
	sort.Strings(c.res.Env)
	c.res.Target = c.target
	out, err := c.render(scens, load)
	if err != nil {
		return nil, c.res, err
	}
	if err := validate(out, c.sources, c.required); err != nil {
		return nil, c.res, fmt.Errorf("the converted plan does not load (please report this): %v", err)
	}
	return out, c.res, nil
}

// collect reads what JMeter makes global before any sampler runs: the
// user-defined variables, the CSV data sets' columns and the extractors'
// variable names, so that a reference anywhere finds them.
func (c *conv) collect(root *elem) {
	for _, a := range root.arguments("TestPlan.user_defined_variables") {
		c.vars[a.name] = c.text(a.value, modePlain, root.where())
	}
	var walk func(e *elem)
	walk = func(e *elem) {
		if !e.enabled {
			return
		}
		switch e.class {
		case "Arguments":
			for _, a := range e.arguments("Arguments.arguments") {
				c.vars[a.name] = c.text(a.value, modePlain, e.where())
			}
		case "CSVDataSet":
			c.csv(e)
		}
		for _, ch := range e.children {
			if ch.enabled && isExtractor(ch.class) {
				// Only an extractor that becomes a capture names one: a
				// reference to another's variable stays text.
				c.quiet++
				if c.extractorApplies(e, ch) {
					c.extractor(ch)
				}
				c.quiet--
			}
			walk(ch)
		}
	}
	walk(root)
}

// reserved are the names templates give a meaning of their own; a
// capture may not take one.
var reserved = map[string]bool{
	"tenant": true, "vu": true, "iter": true, "uuid": true, "now_ms": true, "rand_int": true, "vars": true, "data": true,
}

func (c *conv) captureName(n string) string {
	n = strings.TrimSpace(n)
	if n == "" {
		return ""
	}
	if p, ok := c.captures[n]; ok {
		return p
	}
	p := ident(n)
	if reserved[p] {
		p = "v_" + p
	}
	c.captures[n] = p
	return p
}

// Node makers for the plan's YAML.

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// plain is a scalar YAML types itself (a number stays a number).
func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func mapping(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

func seq(items ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Content: items} }

func flow(n *yaml.Node) *yaml.Node { n.Style = yaml.FlowStyle; return n }

func (n *node) add(k string, v *yaml.Node) { n.m.Content = append(n.m.Content, str(k), v) }

// node builds a mapping key by key.
type node struct{ m *yaml.Node }

func newNode() *node { return &node{m: mapping()} }
