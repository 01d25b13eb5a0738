package vu

import (
	"strings"
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/plan/lang"
	"github.com/stampede-load/stampede/internal/sample"
)

// Script steps run a plan's JavaScript function (plan.Script, compiled
// once at load) through the script runtime (lang.Run), which lends a
// runtime for the call. What a user keeps between steps is plain data:
// its captures, and the headers a script set for its next request; the
// runtime sees them through the user's scriptHost.

// scriptState is a user's part of script steps.
type scriptState struct {
	// headers are set by a script for the user's next request only.
	headers []scriptHeader
	// host is the user as the script of the call in progress sees it:
	// kept here, so a call makes no host of its own.
	host scriptHost
	// running says a call is under way, for a test that interrupts one.
	running atomic.Bool
}

type scriptHeader struct{ name, value string }

// Outcomes of a script step.
const (
	scriptOK = iota
	scriptFailed
	// scriptStopped: the run's end cut the call off; nothing failed.
	scriptStopped
)

// runScript runs a script step. A script that calls fail(message), throws,
// or sets what it may not fails the step as a check, counted against the
// request step it comes before (as control steps' failures are), and ends
// the iteration.
func (u *User) runScript(st *Step) int {
	u.script.host = scriptHost{u: u, s: st.Script}
	u.script.running.Store(true)
	out, msg := lang.Run(st.Script.Program, &u.script.host)
	u.script.running.Store(false)
	u.script.host = scriptHost{}
	if out == lang.Done {
		return scriptOK
	}
	// Headers set before the failure were for a request that is not sent.
	u.clearScriptHeaders()
	if out == lang.Stopped {
		return scriptStopped
	}
	if hit := u.prog.ScriptMemoryHit; out == lang.OutOfMemory && hit != nil {
		hit(msg)
	}
	if st.failID >= 0 {
		u.shard.FailUnsent(st.failID, sample.Check, st.Name+": "+msg)
	}
	return scriptFailed
}

// clearScriptHeaders drops the headers a script set: they were for one
// request, and that request is not going to be sent.
func (u *User) clearScriptHeaders() {
	if len(u.script.headers) > 0 {
		clear(u.script.headers)
		u.script.headers = u.script.headers[:0]
	}
}

// addScriptHeaders adds the headers a script set to the request being
// built, once: they are for this request only.
func (u *User) addScriptHeaders(add func(name string, value func([]byte) []byte)) {
	for _, h := range u.script.headers {
		add(h.name, func(b []byte) []byte { return append(b, h.value...) })
	}
	u.clearScriptHeaders()
}

// scriptHost is a user as its script sees it (lang.Host): the captures of
// earlier steps and the script's sets, the setup's captures, read-only,
// the plan's vars and the iteration's last response.
type scriptHost struct {
	u *User
	s *plan.Script
}

func (h *scriptHost) Capture(name string) (string, bool) {
	env := &h.u.env
	if slot, ok := h.s.Captures[name]; ok {
		return env.Captures[slot], true
	}
	if slot, ok := h.s.Globals[name]; ok && slot < len(env.Globals) {
		return env.Globals[slot], true
	}
	return "", false
}

func (h *scriptHost) CaptureKeys() []string {
	keys := make([]string, 0, len(h.s.Captures)+len(h.s.Globals))
	for k := range h.s.Captures {
		keys = append(keys, k)
	}
	for k := range h.s.Globals {
		keys = append(keys, k)
	}
	return keys
}

func (h *scriptHost) SetCapture(name, value string) bool {
	slot, ok := h.s.Sets[name]
	if ok {
		h.u.env.Captures[slot] = value
	}
	return ok
}

func (h *scriptHost) AddHeader(name, value string) {
	h.u.script.headers = append(h.u.script.headers, scriptHeader{name, value})
}

func (h *scriptHost) Var(name string) (string, bool) {
	v, ok := h.u.prog.Plan.Vars[name]
	return v, ok
}

func (h *scriptHost) VarKeys() []string {
	vars := h.u.prog.Plan.Vars
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	return keys
}

func (h *scriptHost) HasResponse() bool { return h.s.AfterRequest }
func (h *scriptHost) Status() int       { return h.u.resp.Status }
func (h *scriptHost) Body() []byte      { return h.u.resp.Body }

func (h *scriptHost) Header(name string) ([]byte, bool) {
	v := h.u.resp.Get(name)
	return v, v != nil
}

func (h *scriptHost) HeaderNames() []string {
	var keys []string
	for _, f := range h.u.resp.Header {
		keys = append(keys, strings.ToLower(string(f.Name)))
	}
	return keys
}

func (h *scriptHost) Interrupted() bool { return h.u.interrupted.Load() }

func (h *scriptHost) At(line, col int) string { return h.s.At(line, col).String() }
