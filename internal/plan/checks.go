package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/profile"
	"github.com/stampede-load/stampede/internal/proto/opname"
	"github.com/stampede-load/stampede/internal/suggest"
)

// checkPopulation refuses a plan that would run and send nothing: every
// stage at 0 users (or 0/s) and no connection population. With gates the
// levels give the population, so the stages may well be 0.
func (p *parser) checkPopulation(f map[string]kv) {
	pl := p.plan
	// After another problem a stage or scenario may be missing, and the
	// plan is refused anyway.
	if len(p.probs) > 0 || pl.Gates != nil || len(pl.Load.Stages) == 0 || profile.MaxTarget(pl.Load.Stages) > 0 {
		return
	}
	for _, s := range pl.Scenarios {
		if s.persistent() {
			return
		}
	}
	what, want := "users: 0", "users above 0"
	if pl.Load.Model == Open {
		what, want = "rate: 0/s", "a rate above 0/s"
	}
	pos := pl.stagePosAt(0)
	if e, ok := f["load"]; ok {
		pos = p.pos(e.k)
	}
	p.errAt(pos, "every stage has %s, so the run would send nothing: give at least one stage %s", what, want)
}

// checkThresholds parses thresholds and gate SLOs (package gate owns the
// syntax) and checks that each step they name exists, so a typo is caught
// before the run instead of failing the verdict after it.
func (p *parser) checkThresholds() {
	pl := p.plan
	check := append([]Located{}, pl.Thresholds...)
	if pl.Gates != nil {
		check = append(check, pl.Gates.SLO...)
	}
	if len(check) == 0 {
		return
	}
	names, pushes := pl.metricNames()
	// A step that failed to parse is missing from names; saying so again
	// under each threshold would only repeat its own problem.
	stepsKnown := len(p.probs) == 0
	for _, t := range check {
		th, err := gate.Parse(t.Value)
		if err != nil {
			p.errAt(t.Pos, "%v", err)
			continue
		}
		if !stepsKnown {
			continue
		}
		if msg := stepProblem(t.Value, th, names, pushes); msg != "" {
			p.errAt(t.Pos, "%s", msg)
		}
	}
}

// StepProblem says why the criterion expr (parsed as th) cannot be
// judged on a run of the plan: the step it names is not one of the plan's
// ("" when it is, or names none). A command's own criteria (capacity
// --slo) are held to the rule the plan's thresholds are.
func (pl *Plan) StepProblem(expr string, th gate.Threshold) string {
	names, pushes := pl.metricNames()
	return stepProblem(expr, th, names, pushes)
}

func stepProblem(expr string, th gate.Threshold, names map[string]bool, pushes bool) string {
	if th.Step == "" || th.Kind == gate.Monitor || names[th.Step] {
		return ""
	}
	// A SignalR client counts every push target it receives, listed or
	// not, so any push name may turn up in the result.
	if pushes && (strings.HasPrefix(th.Step, "push ") || strings.Contains(th.Step, "/push ")) {
		return ""
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	if s := suggest.Closest(th.Step, list); s != "" {
		return fmt.Sprintf("threshold %s names step %s, which the plan does not have: did you mean %s?", q(expr), q(th.Step), q(s))
	}
	return fmt.Sprintf("threshold %s names step %s, which the plan does not have: name a step by its name, \"METHOD /path\" as written when it has none, or scenario/name", q(expr), q(th.Step))
}

// metricNames is every step name a result of the plan can hold, bare and
// as scenario/name; pushes is set when a SignalR scenario may record push
// targets it was not told to listen for.
func (pl *Plan) metricNames() (map[string]bool, bool) {
	names := map[string]bool{}
	pushes := false
	for _, s := range pl.Scenarios {
		add := func(n string) {
			names[n] = true
			names[s.Name+"/"+n] = true
		}
		for _, st := range s.Steps {
			if st.Kind == StepRequest {
				add(st.Name)
			}
		}
		c := s.Connection.Spec()
		if c == nil {
			continue
		}
		// As the protocol packages name them (proto/opname).
		switch {
		case c.SignalR != nil:
			pushes = true
			for _, n := range []string{opname.Negotiate, opname.NegotiateRedirect, opname.NegotiateRestart, opname.Upgrade, opname.Handshake} {
				add(n)
			}
			switch c.SignalR.Transport {
			case "sse":
				add(opname.SSEOpen)
			case "long_polling":
				add(opname.Poll)
			case "auto":
				add(opname.SSEOpen)
				add(opname.Poll)
			}
			for _, call := range c.SignalR.Calls {
				add([...]func(string) string{opname.Invoke, opname.Send, opname.Stream}[call.Mode](call.Method))
			}
			for _, t := range c.SignalR.Listen {
				add(opname.Push(t))
			}
		case c.WebSocket != nil:
			add(opname.Upgrade)
			for _, st := range c.WebSocket.Steps {
				if st.Kind == WSSend || st.Kind == WSWait {
					add(st.Name)
				}
			}
		}
		add(opname.Session)
	}
	return names, pushes
}

// Limits a process is checked against before any load (CheckFit).
const (
	// ReservedFiles are the open files kept back from the load for what a
	// run needs beside it: the result and checkpoint writes, monitors,
	// the demo target, standard streams, DNS and the runtime's own.
	ReservedFiles = 256
	// MaxRatePerProcess is the most arrivals per second one process is
	// asked to schedule: one every microsecond, already past what the
	// fastest request path (about 8 µs of CPU each, docs/benchmarks.md)
	// can start on a large machine; beyond it the schedule would be
	// fiction, so the load must be split across processes.
	MaxRatePerProcess = 1_000_000
)

// Peak is the most a process of a run holds at once.
type Peak struct {
	// HTTP is the most HTTP connections: users (closed model; capped by
	// max_conns_per_host) or max_in_flight (open model), each with at most
	// one connection at a time.
	HTTP int64
	// Conns is the persistent (WebSocket, SignalR) connections.
	Conns int64
	// Rate is the peak arrivals per second (open model).
	Rate float64
}

// Files is the open files the peak needs.
func (k Peak) Files() int64 { return k.HTTP + k.Conns }

// PeakOf is the peak of one of processes equal parts of the run (the
// segments of --workers N or --segment i/N), rounded up.
func (pl *Plan) PeakOf(processes int) Peak {
	n := int64(max(processes, 1))
	share := func(v int64) int64 { return (v + n - 1) / n }
	var k Peak
	peak := profile.MaxTarget(pl.Load.Stages)
	if pl.Load.Model == Open {
		k.Rate = peak / float64(n)
		k.HTTP = share(int64(pl.Load.MaxInFlight))
	} else {
		k.HTTP = share(int64(math.Min(math.Round(peak), math.MaxInt64/2)))
		if c := int64(pl.HTTP.MaxConnsPerHost); c > 0 && pl.singleOrigin() {
			k.HTTP = min(k.HTTP, max(1, share(c)))
		}
	}
	if !pl.hasRequests() {
		k.HTTP = 0
	}
	for _, s := range pl.Scenarios {
		if s.Connection != nil {
			k.Conns += share(int64(s.Connection.Count(max(pl.Tenants, 1))))
		}
	}
	return k
}

func (pl *Plan) hasRequests() bool {
	for _, s := range pl.Scenarios {
		if !s.persistent() {
			return true
		}
	}
	return false
}

// singleOrigin reports whether every request goes to the target, so a
// per-host connection cap bounds all of a process's HTTP connections.
func (pl *Plan) singleOrigin() bool {
	for _, s := range pl.Scenarios {
		for _, st := range s.Steps {
			if st.Kind == StepRequest && (st.URL == nil || !strings.HasPrefix(st.URL.Source, "/")) {
				return false
			}
		}
	}
	return true
}

// LowerToFit lowers a max_in_flight the plan does not set (the default,
// a safety cap) to what one of processes processes can hold under
// openFiles, as CheckFit does. It returns a line saying so, or "" when
// nothing changed, because a run whose cap was lowered drops arrivals the
// user would otherwise have no way to explain.
func (pl *Plan) LowerToFit(processes int, openFiles uint64) string {
	processes = max(processes, 1)
	if pl.Load.Model != Open || pl.maxInFlightPos.Line != 0 || openFiles == math.MaxUint64 {
		return ""
	}
	k := pl.PeakOf(processes)
	budget := int64(openFiles) - ReservedFiles - k.Conns
	if budget <= 0 || k.HTTP <= budget {
		return ""
	}
	was := pl.Load.MaxInFlight
	pl.Load.MaxInFlight = int(budget) * processes
	return "max_in_flight lowered from " + fmtCount(float64(was)) + " to " + fmtCount(float64(pl.Load.MaxInFlight)) +
		" to fit the open-files limit (RLIMIT_NOFILE " + fmtCount(float64(openFiles)) + "); set it in the plan to choose"
}

// CheckFit refuses a plan that one of processes processes cannot run:
// more connections at the peak than openFiles (the process's open-files
// limit, RLIMIT_NOFILE) allows after ReservedFiles, or a rate above
// MaxRatePerProcess. The error is an *Error naming the place in the plan
// and what to do: split the run (--workers) or raise the limit.
//
// A max_in_flight the plan does not set is only a safety cap, not a
// population the user asked for: when the default does not fit, the plan
// is judged as LowerToFit would run it instead of refused. CheckFit
// itself changes nothing: the caller lowers the cap (and says so).
func (pl *Plan) CheckFit(processes int, openFiles uint64) error {
	processes = max(processes, 1)
	lowered := *pl
	lowered.LowerToFit(processes, openFiles)
	k := lowered.PeakOf(processes)
	var probs []Problem
	if k.Rate > MaxRatePerProcess {
		need := math.Ceil(k.Rate * float64(processes) / MaxRatePerProcess)
		msg := "rate " + fmtCount(k.Rate) + "/s per process is more than one process can schedule (at most " + fmtCount(MaxRatePerProcess) + " arrivals/s): "
		if n, ok := advisedProcesses(need); ok {
			msg += "run it as " + n + " or more processes with --workers " + n + " (or --segment i/N on several machines)"
		} else {
			msg += "it would take more than " + fmtCount(MaxAdvisedProcesses) + " processes; lower the rate"
		}
		probs = append(probs, Problem{Pos: pl.peakStagePos(), Msg: msg})
	}
	if openFiles != math.MaxUint64 && uint64(k.Files())+ReservedFiles > openFiles {
		avail := int64(openFiles) - ReservedFiles
		what := pl.peakWhat(k, processes)
		msg := what + " need " + fmtCount(float64(k.Files())) + " open connections at the peak, but this process may open only " +
			fmtCount(float64(openFiles)) + " files (its open-files limit, RLIMIT_NOFILE; " + strconv.Itoa(ReservedFiles) + " are kept for the result file, monitors and logs)"
		if avail > 0 {
			total := pl.PeakOf(1).Files()
			if n, ok := advisedProcesses(math.Ceil(float64(total) / float64(avail))); ok {
				msg += ": run it as several processes with --workers " + n + " (or --segment i/N on several machines),"
			} else {
				msg += ": more than " + fmtCount(MaxAdvisedProcesses) + " processes would be needed; lower the load,"
			}
		} else {
			msg += ":"
		}
		msg += " or raise the limit (ulimit -n, LimitNOFILE= in systemd, --ulimit nofile= in docker)"
		if pl.Load.Model == Open && k.HTTP > k.Conns {
			msg += ", or lower max_in_flight"
		}
		probs = append(probs, Problem{Pos: pl.peakPos(k), Msg: msg})
	}
	if len(probs) > 0 {
		return &Error{Problems: probs}
	}
	return nil
}

// MaxAdvisedProcesses is the most processes an error advises splitting a
// run into: past it (a rate of 1e308/s) the advice would be absurd, or
// overflow into a negative --workers.
const MaxAdvisedProcesses = 10_000

// advisedProcesses is need as a --workers value, when it is one to advise.
func advisedProcesses(need float64) (string, bool) {
	if math.IsNaN(need) || need > MaxAdvisedProcesses {
		return "", false
	}
	return strconv.Itoa(max(int(need), 2)), true
}

func (pl *Plan) peakWhat(k Peak, processes int) string {
	var parts []string
	if k.HTTP > 0 {
		if pl.Load.Model == Open {
			parts = append(parts, fmtCount(float64(k.HTTP))+" iterations in flight (max_in_flight)")
		} else {
			parts = append(parts, fmtCount(float64(k.HTTP))+" users")
		}
	}
	if k.Conns > 0 {
		parts = append(parts, fmtCount(float64(k.Conns))+" persistent connections")
	}
	s := strings.Join(parts, " and ")
	if processes > 1 {
		s += " in each of " + strconv.Itoa(processes) + " processes"
	}
	return s
}

// peakPos is where the plan sets what dominates the peak.
func (pl *Plan) peakPos(k Peak) Pos {
	if k.Conns > k.HTTP {
		var best *Scenario
		for _, s := range pl.Scenarios {
			if s.Connection != nil && (best == nil || s.Connection.Count(max(pl.Tenants, 1)) > best.Connection.Count(max(pl.Tenants, 1))) {
				best = s
			}
		}
		if best != nil {
			return best.Pos
		}
	}
	if pl.Load.Model == Open && pl.maxInFlightPos.Line > 0 {
		return pl.maxInFlightPos
	}
	return pl.peakStagePos()
}

func (pl *Plan) peakStagePos() Pos {
	st := pl.Load.Stages
	if len(st) == 0 {
		return Pos{File: pl.File}
	}
	m := profile.MaxTarget(st)
	for i, s := range st {
		if s.From == m || s.To == m {
			return pl.stagePosAt(i)
		}
	}
	return pl.stagePosAt(0)
}

// stagePosAt is where stage i was written; for stages the plan made
// (waves, levels), where what made them was written.
func (pl *Plan) stagePosAt(i int) Pos {
	if i < len(pl.stagePos) {
		return pl.stagePos[i]
	}
	return pl.madePos
}

// fmtCount prints a count with thousands separators, as the reports do.
func fmtCount(v float64) string {
	if math.Abs(v) >= 1e15 {
		// Digits past the float's precision would be noise: 1e308 is not
		// a 309-digit count.
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
