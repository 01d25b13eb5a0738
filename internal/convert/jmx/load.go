package jmx

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	classStepping    = "kg.apc.jmeter.threads.SteppingThreadGroup"
	classConcurrency = "com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup"
)

// stage is one load stage: users go from `from` to `to` over dur, in
// steps equal jumps (0: smoothly). toText keeps a property reference
// (${THREADS:-10}) where the number came from one.
type stage struct {
	dur            time.Duration
	from, to       float64
	fromText, text string
	steps          int
}

// scenario is one thread group's flow.
type scenario struct {
	name   string
	users  float64
	stages []stage
	node   *yaml.Node
}

// num reads a numeric property through variables and properties: its
// value (a property's default where it is one) and its plan text.
func (c *conv) num(e *elem, prop string, def float64) (float64, string) {
	raw := e.prop(prop)
	if raw == "" {
		return def, formatNum(def)
	}
	t := c.text(raw, modePlain, e.where())
	if v, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return v, t
	}
	if strings.HasPrefix(t, "${") && strings.HasSuffix(t, "}") && strings.Count(t, "${") == 1 {
		if _, d, ok := strings.Cut(t[2:len(t)-1], ":-"); ok {
			if v, err := strconv.ParseFloat(d, 64); err == nil {
				return v, t
			}
		}
	}
	c.skip(e.where(), prop+" "+strconv.Quote(raw)+" is not a number: "+formatNum(def)+" is used")
	return def, formatNum(def)
}

func formatNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func secs(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// threadGroups converts each thread group into a scenario and the first
// one's profile into the plan's load (with every group's users).
func (c *conv) threadGroups(root *elem) ([]*scenario, []stage, error) {
	base := scope{}.with(c, root)
	// The test plan's own header managers apply to every request: the
	// plan's defaults, which a step's header of the same name replaces.
	c.defaultHeaders = c.headers(base.headers, root.where())
	base.headers = nil
	var scens []*scenario
	for _, tg := range root.children {
		if !isThreadGroup(tg.class) {
			if k := kindOf(tg); tg.enabled && k != kindConfig && k != kindIgnored {
				c.skip(tg.where(), "not converted (outside a thread group)")
			}
			continue
		}
		if !tg.enabled {
			if isThreadGroup(tg.class) {
				c.skip(tg.where(), "disabled")
			}
			continue
		}
		switch tg.class {
		case "SetupThreadGroup":
			c.setup = append(c.setup, c.steps(tg.children, base.with(c, tg))...)
			c.note("%s runs once, before the load, as the plan's setup", tg.where())
			continue
		case "PostThreadGroup":
			c.teardown = append(c.teardown, c.steps(tg.children, base.with(c, tg))...)
			c.note("%s runs once, after the load, as the plan's teardown", tg.where())
			continue
		}
		stages, ok := c.profile(tg)
		if !ok {
			continue
		}
		sc := &scenario{name: tg.name, stages: stages}
		for _, s := range stages {
			sc.users = math.Max(sc.users, s.to)
		}
		sc.node = c.scenarioNode(tg, base.with(c, tg))
		if sc.node == nil {
			c.skip(tg.where(), "no HTTP sampler converted: the thread group is left out")
			continue
		}
		scens = append(scens, sc)
	}
	if len(scens) == 0 {
		return nil, nil, errors.New("nothing to convert: no enabled thread group with an HTTP sampler")
	}
	return scens, c.combine(scens), nil
}

func isThreadGroup(class string) bool {
	switch class {
	case "ThreadGroup", "SetupThreadGroup", "PostThreadGroup", classStepping, classConcurrency:
		return true
	}
	return strings.Contains(class, "ThreadGroup")
}

// combine makes the plan's one load profile: a single group's own, or the
// first group's shape carrying every group's users (the scenarios are
// weighted by their groups' users).
func (c *conv) combine(scens []*scenario) []stage {
	if len(scens) == 1 {
		return scens[0].stages
	}
	total := 0.0
	for _, s := range scens {
		total += s.users
	}
	first := scens[0]
	f := 1.0
	if first.users > 0 {
		f = total / first.users
	}
	out := make([]stage, len(first.stages))
	for i, s := range first.stages {
		s.from, s.to = math.Round(s.from*f), math.Round(s.to*f)
		if s.fromText != "" {
			s.fromText = formatNum(s.from)
		}
		s.text = formatNum(s.to)
		out[i] = s
	}
	c.note("%d thread groups: the plan has one load profile, the shape of %s with all groups' %s users; each scenario's weight is its group's users", len(scens), first.name, formatNum(total))
	return out
}

// profile is a thread group's users over time.
func (c *conv) profile(tg *elem) ([]stage, bool) {
	switch tg.class {
	case "ThreadGroup":
		return c.plainGroup(tg), true
	case classStepping:
		return c.steppingGroup(tg), true
	case classConcurrency:
		return c.concurrencyGroup(tg), true
	}
	c.skip(tg.where(), "thread group class "+tg.class+" is not converted")
	return nil, false
}

func (c *conv) plainGroup(tg *elem) []stage {
	n, nText := c.num(tg, "ThreadGroup.num_threads", 1)
	ramp, rampText := c.num(tg, "ThreadGroup.ramp_time", 0)
	var hold float64
	if tg.boolProp("ThreadGroup.scheduler", false) {
		d, dText := c.num(tg, "ThreadGroup.duration", 0)
		if dText != formatNum(d) || rampText != formatNum(ramp) {
			c.note("%s: the stages' durations are computed from the properties' defaults (%ss ramp-up, %ss in all)", tg.where(), formatNum(ramp), formatNum(d))
		}
		delay, _ := c.num(tg, "ThreadGroup.delay", 0)
		hold = d - ramp
		if d <= 0 {
			hold = c.o.Duration.Seconds()
		}
		if delay > 0 {
			return append([]stage{{dur: secs(delay), text: "0"}}, rampHold(ramp, hold, n, nText)...)
		}
		return rampHold(ramp, hold, n, nText)
	}
	hold = c.o.Duration.Seconds()
	loops := "1"
	if mc := tg.props["ThreadGroup.main_controller"]; mc != nil {
		sub := newElem(mc, "x")
		loops = sub.prop("LoopController.loops")
	}
	c.note("%s runs %s loops a user; a plan's load is timed: the users are held %s (--duration)", tg.where(), loopsText(loops), c.o.Duration)
	return rampHold(ramp, hold, n, nText)
}

func loopsText(l string) string {
	if l == "-1" {
		return "endless"
	}
	return l
}

func rampHold(ramp, hold, n float64, nText string) []stage {
	var out []stage
	if ramp > 0 {
		out = append(out, stage{dur: secs(ramp), fromText: "0", to: n, text: nText})
	}
	if hold > 0 || len(out) == 0 {
		out = append(out, stage{dur: secs(math.Max(hold, 1)), to: n, text: nText})
	}
	return out
}

// steppingGroup: after the initial delay, a burst of users, then "Start
// users count" more every "Start users period" up to the total, held for
// "flighttime", then stopped "Stop users count" every "Stop users period".
func (c *conv) steppingGroup(tg *elem) []stage {
	n, nText := c.num(tg, "ThreadGroup.num_threads", 1)
	delay, _ := c.num(tg, "Threads initial delay", 0)
	burst, _ := c.num(tg, "Start users count burst", 0)
	step, _ := c.num(tg, "Start users count", n)
	period, _ := c.num(tg, "Start users period", 0)
	hold, _ := c.num(tg, "flighttime", c.o.Duration.Seconds())
	stopN, _ := c.num(tg, "Stop users count", 0)
	stopP, _ := c.num(tg, "Stop users period", 0)
	ru, _ := c.num(tg, "rampUp", 0)
	var out []stage
	if delay > 0 {
		out = append(out, stage{dur: secs(delay), text: "0"})
	}
	if b := math.Min(burst, n); ru <= 0 && step > 0 && period > 0 && b < n && math.Mod(n-b, step) != 0 {
		c.note("%s: %s users in %d equal steps (JMeter's last step is smaller)", tg.where(), formatNum(n-b), int(math.Ceil((n-b)/step)))
	}
	// A stage pair per step: past a few hundred steps the plan would be
	// the stages' list, so the users then start at once each step.
	if ru > 0 && step > 0 && (n-math.Min(burst, n))/step > 500 {
		c.note("%s: over 500 steps: each step's users start at once (JMeter spreads them over rampUp %ss)", tg.where(), formatNum(ru))
		ru = 0
	}
	if ru > 0 && step > 0 {
		out = append(out, steppedRamps(n, nText, burst, step, period, ru)...)
		out = append(out, stage{dur: secs(math.Max(hold, 1)), to: n, text: nText})
	} else {
		out = append(out, steppedJumps(n, nText, burst, step, period, hold)...)
	}
	if stopN > 0 && stopN < n && stopP > 0 {
		k := int(math.Ceil(n / stopN))
		out = append(out, stage{dur: secs(float64(k) * stopP), from: n, fromText: nText, text: "0", steps: k})
	}
	if len(out) == 0 {
		out = append(out, stage{dur: c.o.Duration, to: n, text: nText})
	}
	return out
}

// steppedJumps is the stepping group's climb when each step's users start
// at once: a burst, then a step every period, the last held for hold.
func steppedJumps(n float64, nText string, burst, step, period, hold float64) []stage {
	var out []stage
	held := hold
	burst = math.Min(burst, n)
	if burst > 0 && period > 0 {
		out = append(out, stage{dur: secs(period), to: burst, text: formatNum(burst)})
	}
	if step > 0 && period > 0 && burst < n {
		k := int(math.Ceil((n - burst) / step))
		out = append(out, stage{dur: secs(float64(k) * period), from: burst, fromText: formatNum(burst), to: n, text: nText, steps: k})
		// The ramp's last step already holds every user for a period.
		held = math.Max(hold-period, 0)
	}
	if held > 0 {
		out = append(out, stage{dur: secs(held), to: n, text: nText})
	}
	return out
}

// steppedRamps is the climb when each step's users start over rampUp
// seconds, as the plugin does: a step lasts period + rampUp (its users
// starting over the rampUp, then held for the period), a burst of 0 is a
// first step of "Start users count", and the hold ("flighttime") starts
// when the last step's users have started.
func steppedRamps(n float64, nText string, burst, step, period, rampUp float64) []stage {
	burst = math.Min(burst, n)
	if burst <= 0 {
		burst = math.Min(step, n)
	}
	out := []stage{{dur: secs(rampUp), fromText: "0", to: burst, text: formatNum(burst)}}
	for cur := burst; cur < n; {
		next := math.Min(cur+step, n)
		if period > 0 {
			out = append(out, stage{dur: secs(period), to: cur, text: formatNum(cur)})
		}
		out = append(out, stage{dur: secs(rampUp * (next - cur) / step), from: cur, fromText: formatNum(cur), to: next, text: formatNum(next)})
		cur = next
	}
	last := &out[len(out)-1]
	last.text = nText
	return out
}

// concurrencyGroup: TargetLevel users reached over RampUp (in Steps equal
// steps when given), then held for Hold; times in Unit (S or M).
func (c *conv) concurrencyGroup(tg *elem) []stage {
	t, tText := c.num(tg, "TargetLevel", 1)
	ramp, _ := c.num(tg, "RampUp", 0)
	steps, _ := c.num(tg, "Steps", 0)
	hold, _ := c.num(tg, "Hold", 0)
	unit := 60.0
	if strings.EqualFold(tg.prop("Unit"), "S") {
		unit = 1
	}
	if it := tg.prop("Iterations"); it != "" {
		c.skip(tg.where(), "Iterations "+strconv.Quote(it)+" (a plan's load is timed): not converted")
	}
	var out []stage
	if ramp > 0 {
		out = append(out, stage{dur: secs(ramp * unit), fromText: "0", to: t, text: tText, steps: int(steps)})
	}
	if hold > 0 || len(out) == 0 {
		h := secs(hold * unit)
		if hold <= 0 {
			h = c.o.Duration
		}
		out = append(out, stage{dur: h, to: t, text: tText})
	}
	return out
}

func stageNode(s stage) *yaml.Node {
	users := plain(s.text)
	if s.fromText != "" {
		users = str(s.fromText + " -> " + s.text)
	}
	n := mapping(str("duration"), str(durText(s.dur)), str("users"), users)
	if s.steps > 1 {
		n.Content = append(n.Content, str("steps"), plain(strconv.Itoa(s.steps)))
	}
	return flow(n)
}

func durText(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}
