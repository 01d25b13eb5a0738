package jmx

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// timers are the think steps JMeter's timers in scope add before a
// sampler.
func (c *conv) timers(ts []*elem) []*yaml.Node {
	var out []*yaml.Node
	for _, t := range ts {
		delay, ok1 := c.millis(t, "ConstantTimer.delay")
		rng, ok2 := c.millis(t, "RandomTimer.range")
		if !ok1 || t.class != "ConstantTimer" && !ok2 {
			continue
		}
		if delay == 0 && rng == 0 {
			// A zero wait: JMeter's templates leave one as a slot.
			continue
		}
		var v *yaml.Node
		switch t.class {
		case "ConstantTimer":
			v = str(msText(delay))
		case "UniformRandomTimer":
			v = str(msText(delay) + ".." + msText(delay+rng))
			if rng == 0 {
				v = str(msText(delay))
			}
		case "GaussianRandomTimer":
			v = flow(mapping(str("normal"), str(msText(delay)), str("sd"), str(msText(rng))))
		}
		out = append(out, flow(mapping(str("think"), v)))
	}
	return out
}

// flowAction converts a Flow Control Action that pauses (JMeter's "Think
// Time" template: a pause with a timer under it) into think steps: the
// timers in scope, which JMeter runs before it as before any sampler,
// then its own pause.
func (c *conv) flowAction(e *elem, sc scope) []*yaml.Node {
	if e.prop("ActionProcessor.action") != "1" {
		c.skip(e.where(), "a Flow Control Action that stops or restarts: not converted")
		return nil
	}
	out := c.timers(sc.with(c, e).timers)
	if ms, ok := c.millis(e, "ActionProcessor.duration"); ok && ms > 0 {
		out = append(out, flow(mapping(str("think"), str(msText(ms)))))
	}
	return out
}

func (c *conv) millis(e *elem, prop string) (int64, bool) {
	raw := e.prop(prop)
	if raw == "" {
		return 0, true
	}
	v, err := strconv.ParseFloat(c.text(raw, modePlain, e.where()), 64)
	if err != nil || v < 0 {
		if d, ok := c.numDefault(raw, e); ok {
			return d, true
		}
		c.skip(e.where(), prop+" "+strconv.Quote(raw)+" is not a number of milliseconds: not converted")
		return 0, false
	}
	return int64(v), true
}

// numDefault reads a property reference's default, for a number the plan
// cannot take as a reference.
func (c *conv) numDefault(raw string, e *elem) (int64, bool) {
	t := c.text(raw, modePlain, e.where())
	if _, d, ok := strings.Cut(t, ":-"); ok && strings.HasPrefix(t, "${") && strings.HasSuffix(d, "}") {
		if v, err := strconv.ParseInt(strings.TrimSuffix(d, "}"), 10, 64); err == nil && v >= 0 {
			c.note("%s: the property's default %d ms is used", e.where(), v)
			return v, true
		}
	}
	return 0, false
}

func msText(ms int64) string {
	if ms%1000 == 0 {
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// checks writes the extractors in scope as captures and the assertions
// as expect (a Duration Assertion as the step's timeout).
func (c *conv) checks(step *node, sc scope, h http, e *elem) {
	capture := mapping()
	for _, x := range sc.extracts {
		for _, kv := range c.extractor(x) {
			capture.Content = append(capture.Content, kv...)
		}
	}
	if len(capture.Content) > 0 {
		step.add("capture", capture)
	}
	ex := &expect{}
	timeout := h.timeout
	for _, a := range sc.asserts {
		if a.class == "DurationAssertion" {
			if ms, ok := c.millis(a, "DurationAssertion.duration"); ok && ms > 0 {
				if cur, err := strconv.ParseInt(timeout, 10, 64); err != nil || ms < cur {
					timeout = strconv.FormatInt(ms, 10)
				}
				c.note("%s: a Duration Assertion is the step's timeout (a slower answer fails as class timeout)", a.where())
			}
			continue
		}
		c.assertion(a, ex)
	}
	if ms, err := strconv.ParseInt(timeout, 10, 64); err == nil && ms > 0 {
		step.add("timeout", str(msText(ms)))
	}
	if n := ex.node(); n != nil {
		step.add("expect", n)
	}
}

// extractor is one extractor as capture entries (name, {kind: value}).
func (c *conv) extractor(x *elem) [][]*yaml.Node {
	switch x.class {
	case "RegexExtractor":
		return c.regexExtractor(x)
	case "BoundaryExtractor":
		return c.boundaryExtractor(x)
	case "JSONPostProcessor":
		return c.jsonExtractor(x)
	}
	return nil
}

// source names what an extractor reads, for the list of what was not
// converted.
func source(x *elem, prop string) string {
	switch v := x.prop(prop); v {
	case "true":
		return "the response headers"
	case "request_headers":
		return "the request headers"
	case "URL", "code", "message":
		return "the response " + strings.ToLower(v)
	default:
		return v
	}
}

func onBody(x *elem, prop string) bool {
	switch x.prop(prop) {
	case "", "false", "unescaped", "as_document":
		return true
	}
	return false
}

// firstMatch says whether the plan can take the match the extractor
// wants: the first, or a random one (0), which it takes as the first.
func (c *conv) firstMatch(x *elem, prop string) bool {
	switch x.prop(prop) {
	case "", "1":
		return true
	case "0":
		c.note("%s: match number 0 (a random match): the plan takes the first", x.where())
		return true
	}
	return false
}

func (c *conv) regexExtractor(x *elem) [][]*yaml.Node {
	name := strings.TrimSpace(x.prop("RegexExtractor.refname"))
	re := x.rawProp("RegexExtractor.regex")
	tmpl := x.prop("RegexExtractor.template")
	switch {
	case name == "" || re == "":
		c.skip(x.where(), "no variable name or expression")
	case !onBody(x, "RegexExtractor.useHeaders"):
		c.skip(x.where(), "extracts from "+source(x, "RegexExtractor.useHeaders")+", not the body: not converted")
	case !c.firstMatch(x, "RegexExtractor.match_number"):
		c.skip(x.where(), "match number "+x.prop("RegexExtractor.match_number")+" (the plan takes the first match): not converted")
	case tmpl != "" && tmpl != "$1$" && !(tmpl == "$0$" && !strings.Contains(re, "(")):
		c.skip(x.where(), "template "+strconv.Quote(tmpl)+" (the plan takes the first group): not converted")
	case strings.Contains(re, "${"):
		c.skip(x.where(), "an expression with variables: not converted")
	default:
		if _, err := regexp.Compile(re); err != nil {
			c.skip(x.where(), "the expression is not RE2 syntax ("+err.Error()+"): not converted")
			return nil
		}
		c.defaultValue(x, "RegexExtractor.default")
		return [][]*yaml.Node{{str(c.captureName(name)), flow(mapping(str("regex"), str(re)))}}
	}
	return nil
}

func (c *conv) boundaryExtractor(x *elem) [][]*yaml.Node {
	name := strings.TrimSpace(x.prop("BoundaryExtractor.refname"))
	l, r := x.rawProp("BoundaryExtractor.lboundary"), x.rawProp("BoundaryExtractor.rboundary")
	switch {
	case name == "":
		c.skip(x.where(), "no variable name")
	case !onBody(x, "BoundaryExtractor.useHeaders"):
		c.skip(x.where(), "extracts from "+source(x, "BoundaryExtractor.useHeaders")+", not the body: not converted")
	case !c.firstMatch(x, "BoundaryExtractor.match_number"):
		c.skip(x.where(), "match number "+x.prop("BoundaryExtractor.match_number")+" (the plan takes the first match): not converted")
	case strings.Contains(l+r, "${"):
		c.skip(x.where(), "boundaries with variables: not converted")
	default:
		// A boundary extractor is a regex of the two texts around a
		// lazy group; an empty right boundary runs to the end.
		group := "(.*?)"
		if r == "" {
			group = "(.*)"
		}
		c.defaultValue(x, "BoundaryExtractor.default")
		return [][]*yaml.Node{{str(c.captureName(name)), flow(mapping(str("regex"), str("(?s)"+regexp.QuoteMeta(l)+group+regexp.QuoteMeta(r))))}}
	}
	return nil
}

func (c *conv) jsonExtractor(x *elem) [][]*yaml.Node {
	names := strings.Split(x.prop("JSONPostProcessor.referenceNames"), ";")
	paths := strings.Split(x.rawProp("JSONPostProcessor.jsonPathExprs"), ";")
	matches := strings.Split(x.prop("JSONPostProcessor.match_numbers"), ";")
	var out [][]*yaml.Node
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			continue
		}
		if i >= len(paths) {
			c.skip(x.where(), "variable "+n+" has no JSON path")
			continue
		}
		if i < len(matches) && strings.TrimSpace(matches[i]) == "-1" {
			c.skip(x.where(), "variable "+n+": match number -1 (all matches) not converted")
			continue
		}
		p, ok := jsonPath(strings.TrimSpace(paths[i]))
		if !ok {
			c.skip(x.where(), "JSON path "+strconv.Quote(strings.TrimSpace(paths[i]))+" for "+n+" (the plan takes dotted names and indexes): not converted")
			continue
		}
		out = append(out, []*yaml.Node{str(c.captureName(n)), flow(mapping(str("json"), str(p)))})
	}
	if strings.TrimSpace(x.prop("JSONPostProcessor.defaultValues")) != "" {
		c.note("%s: default values are not kept: a capture that finds nothing fails its step", x.where())
	}
	return out
}

func (c *conv) defaultValue(x *elem, prop string) {
	if x.prop(prop) != "" {
		c.note("%s: the default value %q is not kept: a capture that finds nothing fails its step", x.where(), x.prop(prop))
	}
}

var jsonStep = regexp.MustCompile(`^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^'.\[\]]+)'\]|\["([^".\[\]]+)"\])`)

// jsonPath converts a JSONPath without wildcards, filters or recursion
// ($.a.b[0]['c']) to the plan's dotted form (a.b.0.c).
func jsonPath(p string) (string, bool) {
	if !strings.HasPrefix(p, "$") {
		return "", false
	}
	p = p[1:]
	var parts []string
	for p != "" {
		m := jsonStep.FindStringSubmatch(p)
		if m == nil {
			return "", false
		}
		parts = append(parts, m[1]+m[2]+m[3]+m[4])
		p = p[len(m[0]):]
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "."), true
}
