package jmx

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// expect gathers a step's checks from its assertions.
type expect struct {
	status, contains []string
	statusSet        bool
	json             [][2]string
}

func (x *expect) node() *yaml.Node {
	n := newNode()
	switch len(x.status) {
	case 0:
	case 1:
		n.add("status", plain(x.status[0]))
	default:
		l := flow(seq())
		for _, s := range x.status {
			l.Content = append(l.Content, plain(s))
		}
		n.add("status", l)
	}
	switch len(x.contains) {
	case 0:
	case 1:
		n.add("body_contains", str(x.contains[0]))
	default:
		l := seq()
		for _, s := range x.contains {
			l.Content = append(l.Content, str(s))
		}
		n.add("body_contains", l)
	}
	if len(x.json) > 0 {
		m := mapping()
		for _, kv := range x.json {
			m.Content = append(m.Content, str(kv[0]), scalar(kv[1]))
		}
		n.add("json", m)
	}
	if len(n.m.Content) == 0 {
		return nil
	}
	return n.m
}

// scalar keeps numbers, booleans and null as JSON values and the rest as
// text: JMeter compares a JSON value's text.
func scalar(s string) *yaml.Node {
	if s == "true" || s == "false" || s == "null" {
		return plain(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && strings.TrimLeft(s, "-0123456789.") == "" {
		return plain(s)
	}
	return str(s)
}

// Response Assertion test types (a bit mask).
const (
	testMatch     = 1
	testContains  = 2
	testNot       = 4
	testEquals    = 8
	testSubstring = 16
	testOr        = 32
)

var statusCode = regexp.MustCompile(`^[1-5]\d\d$`)

func (c *conv) assertion(a *elem, ex *expect) {
	switch a.class {
	case "ResponseAssertion":
		c.responseAssertion(a, ex)
	case "JSONPathAssertion":
		c.jsonAssertion(a, ex)
	}
}

func (c *conv) responseAssertion(a *elem, ex *expect) {
	typ, _ := strconv.Atoi(a.prop("Assertion.test_type"))
	var tests []string
	for _, n := range a.collection("Asserion.test_strings") {
		tests = append(tests, n.Text)
	}
	field := a.prop("Assertion.test_field")
	switch {
	case a.prop("Assertion.scope") == "variable":
		c.skip(a.where(), "checks the variable "+strconv.Quote(a.prop("Scope.variable"))+", not the response: not converted")
	case typ&testNot != 0:
		c.skip(a.where(), "a negated (NOT) assertion: not converted")
	case a.boolProp("Assertion.assume_success", false) && field == "Assertion.response_code" && len(tests) > 0:
		// "Ignore status" with a code: the code given, a 404 say, is the
		// step's success, as expect.status makes it.
		c.statusAssertion(a, typ, tests, ex)
	case a.boolProp("Assertion.assume_success", false):
		c.skip(a.where(), "\"ignore status\": not converted (the plan's default checks still apply)")
	case len(tests) == 0:
	case field == "Assertion.response_code":
		c.statusAssertion(a, typ, tests, ex)
	case field == "Assertion.response_data" || field == "Assertion.response_data_as_document":
		c.bodyAssertion(a, typ, tests, ex)
	default:
		c.skip(a.where(), "an assertion on "+strings.TrimPrefix(field, "Assertion.")+": not converted")
	}
}

func (c *conv) statusAssertion(a *elem, typ int, tests []string, ex *expect) {
	if len(tests) > 1 && typ&testOr == 0 {
		c.skip(a.where(), "several codes that must all match: not converted")
		return
	}
	for _, t := range tests {
		t = strings.TrimSpace(t)
		if !statusCode.MatchString(t) {
			c.skip(a.where(), "status pattern "+strconv.Quote(t)+": not converted")
			return
		}
	}
	var codes []string
	for _, t := range tests {
		codes = append(codes, strings.TrimSpace(t))
	}
	if !ex.statusSet {
		ex.status, ex.statusSet = codes, true
		return
	}
	// Every assertion in scope must pass: the codes all of them allow.
	var both []string
	for _, s := range ex.status {
		for _, t := range codes {
			if s == t {
				both = append(both, s)
				break
			}
		}
	}
	if len(both) == 0 {
		c.skip(a.where(), "allows none of the codes another assertion in scope allows: not converted")
		return
	}
	ex.status = both
}

func (c *conv) bodyAssertion(a *elem, typ int, tests []string, ex *expect) {
	if len(tests) > 1 && typ&testOr != 0 {
		c.skip(a.where(), "texts of which one must match (OR): not converted")
		return
	}
	for _, t := range tests {
		switch {
		case t == "" || strings.Contains(t, "${"):
			c.skip(a.where(), "text "+strconv.Quote(t)+" (empty or with variables): not converted")
		case typ&testSubstring != 0 || typ&testContains != 0 && regexp.QuoteMeta(t) == t:
			ex.contains = append(ex.contains, t)
		default:
			c.skip(a.where(), "pattern "+strconv.Quote(t)+" (matches, equals or a regex): not converted")
		}
	}
}

func (c *conv) jsonAssertion(a *elem, ex *expect) {
	path, want := a.prop("JSON_PATH"), a.prop("EXPECTED_VALUE")
	p, ok := jsonPath(path)
	switch {
	case !ok:
		c.skip(a.where(), "JSON path "+strconv.Quote(path)+" (the plan takes dotted names and indexes): not converted")
	case !a.boolProp("JSONVALIDATION", false):
		c.skip(a.where(), "checks only that "+path+" exists: not converted")
	case a.boolProp("INVERT", false) || a.boolProp("EXPECT_NULL", false):
		c.skip(a.where(), "an inverted or null check: not converted")
	case a.boolProp("ISREGEX", true) && regexp.QuoteMeta(want) != want:
		c.skip(a.where(), "expected value "+strconv.Quote(want)+" is a regex: not converted")
	case strings.Contains(want, "${"):
		c.skip(a.where(), "expected value with variables: not converted")
	default:
		ex.json = append(ex.json, [2]string{p, want})
	}
}
