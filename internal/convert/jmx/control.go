package jmx

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// controller converts a logic controller: a transaction into a group of
// its requests, a loop into repeat, an if into if, a random controller
// into choose; those the plan has no form for keep their steps, run
// once, and are listed.
func (c *conv) controller(e *elem, sc scope) []*yaml.Node {
	inner := sc.with(c, e)
	switch e.class {
	case "TransactionController":
		inner.group = e.name
		return c.steps(e.children, inner)
	case "LoopController":
		return c.loop(e, inner)
	case "IfController":
		steps := c.steps(e.children, inner)
		cond, ok := c.condition(e.prop("IfController.condition"))
		if !ok {
			c.skip(e.where(), "condition "+strconv.Quote(e.prop("IfController.condition"))+" not converted: its steps run every time")
			return steps
		}
		if len(steps) == 0 {
			return nil
		}
		return []*yaml.Node{mapping(str("if"), str(cond), str("steps"), seq(steps...))}
	case "RandomController":
		return c.random(e, inner)
	case "WhileController":
		c.skip(e.where(), "no while loop in a plan: its steps run once")
	case "OnceOnlyController":
		c.skip(e.where(), "not at the thread group's top: its steps run every iteration")
	}
	return c.steps(e.children, inner)
}

func (c *conv) loop(e *elem, inner scope) []*yaml.Node {
	steps := c.steps(e.children, inner)
	raw := e.prop("LoopController.loops")
	n, err := strconv.Atoi(c.text(raw, modePlain, e.where()))
	switch {
	case err != nil || n < 0 || e.boolProp("LoopController.continue_forever", false) && n < 0:
		c.skip(e.where(), "loop count "+strconv.Quote(raw)+" not converted: its steps run once")
		return steps
	case n == 0 || len(steps) == 0:
		return nil
	case n == 1:
		return steps
	case n > 10000:
		c.skip(e.where(), "loop count "+raw+" is over the plan's 10,000: repeat 10000")
		n = 10000
	}
	return []*yaml.Node{mapping(str("repeat"), plain(strconv.Itoa(n)), str("steps"), seq(steps...))}
}

func (c *conv) random(e *elem, inner scope) []*yaml.Node {
	var branches []*yaml.Node
	for _, ch := range e.children {
		steps := c.steps([]*elem{ch}, inner)
		if len(steps) > 0 {
			branches = append(branches, mapping(str("steps"), seq(steps...)))
		}
	}
	switch len(branches) {
	case 0:
		return nil
	case 1:
		return branches[0].Content[1].Content
	}
	return []*yaml.Node{mapping(str("choose"), seq(branches...))}
}

var (
	// JMeter's recommended conditions: ${__jexl3(...)} or ${__groovy(...)}
	// around an expression, or JavaScript without them.
	wrappedCond = regexp.MustCompile(`^\$\{__(?:jexl3|groovy|javaScript)\((.*)\)\}$`)
	// "${var}" == "text" (or !=, or single quotes), and ${var} > 5.
	stringCond = regexp.MustCompile(`^["']\$\{([A-Za-z_][\w.-]*)\}["']\s*(==|!=)\s*["']([^"'$\\]*)["']$`)
	numberCond = regexp.MustCompile(`^\$\{([A-Za-z_][\w.-]*)\}\s*(==|!=|<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)$`)
)

// condition converts the comparisons an If Controller commonly holds into
// a plan expression; "" and false for anything else.
func (c *conv) condition(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if m := wrappedCond.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
	}
	if m := stringCond.FindStringSubmatch(s); m != nil {
		if ref, ok := c.exprRef(m[1]); ok {
			return ref + " " + m[2] + " " + strconv.Quote(m[3]), true
		}
	}
	if m := numberCond.FindStringSubmatch(s); m != nil {
		if ref, ok := c.exprRef(m[1]); ok {
			return "float(" + ref + ") " + m[2] + " " + m[3], true
		}
	}
	return "", false
}

// exprRef is a JMeter variable as an expression reads it.
func (c *conv) exprRef(name string) (string, bool) {
	if p, ok := c.captures[name]; ok {
		return p, true
	}
	if d, ok := c.columns[name]; ok {
		return "data." + d, true
	}
	return "", false
}
