package jmx

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// scope is what applies to the samplers of a part of the tree: JMeter
// applies config elements, timers, assertions and post-processors to
// every sampler at their level and below, wherever they stand among
// their siblings. Each list runs from the outermost level in.
type scope struct {
	defaults, headers, timers, asserts, extracts []*elem
	group                                        string
}

// kinds of element, by what the conversion does with them.
const (
	kindSampler = "sampler"
	kindAction  = "action" // Flow Control Action: a pause or a stop
	kindControl = "controller"
	kindConfig  = "config" // applied through the scope or collected first
	kindIgnored = "ignored"
	kindOther   = "other"
)

var kinds = map[string]string{
	"HTTPSamplerProxy":      kindSampler,
	"HTTPSampler":           kindSampler,
	"TestAction":            kindAction,
	"TransactionController": kindControl,
	"LoopController":        kindControl,
	"IfController":          kindControl,
	"WhileController":       kindControl,
	"GenericController":     kindControl,
	"OnceOnlyController":    kindControl,
	"RandomController":      kindControl,
	"ConfigTestElement":     kindConfig,
	"HeaderManager":         kindConfig,
	"CSVDataSet":            kindConfig,
	"Arguments":             kindConfig,
	"CookieManager":         kindConfig,
	"ConstantTimer":         kindConfig,
	"UniformRandomTimer":    kindConfig,
	"GaussianRandomTimer":   kindConfig,
	"ResponseAssertion":     kindConfig,
	"DurationAssertion":     kindConfig,
	"JSONPathAssertion":     kindConfig,
	"RegexExtractor":        kindConfig,
	"JSONPostProcessor":     kindConfig,
	"BoundaryExtractor":     kindConfig,
	// Listeners show results in JMeter's GUI or files; stampede's
	// result and reports take their place.
	"ResultCollector": kindIgnored,
	"BackendListener": kindIgnored,
}

func kindOf(e *elem) string {
	if k, ok := kinds[e.class]; ok {
		return k
	}
	if strings.HasSuffix(e.class, "Visualizer") || strings.HasSuffix(e.class, "ResultCollector") {
		return kindIgnored
	}
	return kindOther
}

func isExtractor(class string) bool {
	return class == "RegexExtractor" || class == "JSONPostProcessor" || class == "BoundaryExtractor"
}

// extractorApplies says whether extractor x, a child of parent, becomes
// a capture: JMeter runs it after every sampler in its scope, and where
// nothing matches sets its default, while a plan's capture that finds
// nothing fails the step; so it is a capture where it applies to one
// sampler only.
func (c *conv) extractorApplies(parent, x *elem) bool {
	if kindOf(parent) == kindSampler || countSamplers(parent.children) <= 1 {
		return true
	}
	c.skip(x.where(), "applies to every sampler under "+parent.where()+" (JMeter sets its default where nothing matches; a plan's capture fails the step): put it under the sampler whose response holds the value")
	return false
}

func countSamplers(list []*elem) int {
	n := 0
	for _, e := range list {
		if !e.enabled {
			continue
		}
		if kindOf(e) == kindSampler {
			n++
		}
		n += countSamplers(e.children)
	}
	return n
}

// with is sc and the config elements among parent's children.
func (sc scope) with(c *conv, parent *elem) scope {
	children := parent.children
	out := scope{
		defaults: append([]*elem(nil), sc.defaults...),
		headers:  append([]*elem(nil), sc.headers...),
		timers:   append([]*elem(nil), sc.timers...),
		asserts:  append([]*elem(nil), sc.asserts...),
		extracts: append([]*elem(nil), sc.extracts...),
		group:    sc.group,
	}
	for _, e := range children {
		if !e.enabled {
			continue
		}
		switch e.class {
		case "ConfigTestElement":
			if e.props["HTTPSampler.domain"] != nil || e.props["HTTPsampler.Arguments"] != nil || e.props["HTTPSampler.protocol"] != nil {
				out.defaults = append(out.defaults, e)
			} else {
				c.skip(e.where(), "config element not converted")
			}
		case "HeaderManager":
			out.headers = append(out.headers, e)
		case "ConstantTimer", "UniformRandomTimer", "GaussianRandomTimer":
			out.timers = append(out.timers, e)
		case "ResponseAssertion", "DurationAssertion", "JSONPathAssertion":
			out.asserts = append(out.asserts, e)
		case "RegexExtractor", "JSONPostProcessor", "BoundaryExtractor":
			if c.extractorApplies(parent, e) {
				out.extracts = append(out.extracts, e)
			}
		}
	}
	return out
}

// steps converts the samplers and controllers among children, in order.
func (c *conv) steps(children []*elem, sc scope) []*yaml.Node {
	var out []*yaml.Node
	for _, e := range children {
		if !e.enabled {
			if kindOf(e) != kindIgnored {
				c.skip(e.where(), "disabled")
			}
			continue
		}
		switch kindOf(e) {
		case kindSampler:
			out = append(out, c.sampler(e, sc)...)
		case kindControl:
			out = append(out, c.controller(e, sc)...)
		case kindAction:
			out = append(out, c.flowAction(e, sc)...)
		case kindConfig, kindIgnored:
		default:
			c.skip(e.where(), "not converted")
		}
	}
	return out
}

// scenarioNode is a thread group's steps as a scenario; a Once Only
// Controller at its top becomes the scenario's once steps.
func (c *conv) scenarioNode(tg *elem, sc scope) *yaml.Node {
	var once, rest []*elem
	for _, e := range tg.children {
		if e.enabled && e.class == "OnceOnlyController" {
			once = append(once, e)
		} else {
			rest = append(rest, e)
		}
	}
	var onceSteps []*yaml.Node
	for _, o := range once {
		onceSteps = append(onceSteps, c.steps(o.children, sc.with(c, o))...)
	}
	steps := c.steps(rest, sc)
	if len(steps) == 0 && len(onceSteps) == 0 {
		return nil
	}
	n := newNode()
	if len(once) > 0 {
		n.add("once", seq(onceSteps...))
	}
	if len(steps) == 0 {
		// A scenario needs steps; a user that only logs in waits.
		steps = append(steps, flow(mapping(str("think"), str("1s"))))
		c.note("%s: only once steps; the scenario's steps are a 1s think", tg.where())
	}
	n.add("steps", seq(steps...))
	return n.m
}
