package vu

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/sobek"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sample"
)

// Script steps run a plan's JavaScript function (plan.Script, compiled
// once at load) on a runtime borrowed for the call. A JavaScript runtime
// costs hundreds of KiB, which is why k6 pays megabytes per virtual user;
// here runtimes belong to no user: a call takes one from a free list and
// gives it back, so a run holds about as many as calls run at once (the
// workers), whatever its user count. What a user keeps between steps is
// plain data: its captures, and the headers a script set for its next
// request.

// scriptState is a user's part of script steps.
type scriptState struct {
	// headers are set by a script for the user's next request only.
	headers []scriptHeader
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
	vm := getVM()
	msg, stopped := vm.call(u, st.Script)
	putVM(vm)
	if msg == "" && !stopped {
		return scriptOK
	}
	// Headers set before the failure were for a request that is not sent.
	u.clearScriptHeaders()
	if stopped {
		return scriptStopped
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

// jsVM is a runtime with the script API installed. The objects a script
// sees (captures, vars, response) are made once per runtime and read the
// calling user's state through cur, so a call builds no objects of its
// own.
type jsVM struct {
	rt  *sobek.Runtime
	fns map[*plan.Script]sobek.Callable
	// args are captures, vars and response.
	args [3]sobek.Value
	// started is when the call in progress began (Unix ns; 0: idle), for
	// the watchdog.
	started atomic.Int64
	// owner is the user of the call in progress (nil: idle), so the
	// watchdog can stop a call whose user the run's end interrupted. mu
	// orders the watchdog's interrupt with the call's start and end: an
	// interrupt lands only while its call runs, or before the next call
	// clears it.
	mu    sync.Mutex
	owner *User
	// memCall and memBase are the memory watch's (scriptmem.go), under
	// mu: the call it last saw (its start) and the heap when it saw it.
	memCall, memBase int64
	// mac is hmac_sha256's state for macKey.
	mac    hash.Hash
	macKey string
	cur    struct {
		u      *User
		s      *plan.Script
		failed string
	}
}

// vmFree holds idle runtimes. A channel rather than a sync.Pool because a
// pool is emptied by every other garbage collection, and a new runtime
// with its compiled functions costs far more than a call.
var vmFree = make(chan *jsVM, 4*runtime.GOMAXPROCS(0))

func getVM() *jsVM {
	select {
	case vm := <-vmFree:
		return vm
	default:
		return newVM()
	}
}

func putVM(vm *jsVM) {
	vm.cur.u, vm.cur.s, vm.cur.failed = nil, nil, ""
	select {
	case vmFree <- vm:
	default:
		unwatch(vm)
	}
}

// errScriptFail is what fail() throws, so the script stops there.
var errScriptFail = errors.New("fail")

func newVM() *jsVM {
	rt := sobek.New()
	if err := installBounds(rt); err != nil {
		panic("vu: bounding the script builtins: " + err.Error()) // a bug in boundStrings or boundBulk
	}
	vm := &jsVM{rt: rt, fns: map[*plan.Script]sobek.Callable{}}
	watch(vm)
	vm.args[0] = rt.NewDynamicObject(&capturesObj{vm})
	vm.args[1] = rt.NewDynamicObject(&varsObj{vm})
	vm.args[2] = rt.NewDynamicObject(&responseObj{vm: vm, headers: rt.NewDynamicObject(&headersObj{vm})})
	g := rt.GlobalObject()
	// Native functions take sobek.FunctionCall: a plain Go signature would
	// be called through reflection, several times slower per call.
	str := func(c sobek.FunctionCall, i int) string { return c.Argument(i).String() }
	// Set fails only on a frozen or non-extensible object; the global of
	// a fresh runtime is neither.
	_ = g.Set("set", func(c sobek.FunctionCall) sobek.Value {
		name := str(c, 0)
		slot, ok := vm.cur.s.Sets[name]
		if !ok {
			panic(rt.NewTypeError("set(%q): the step's sets list does not name it", name))
		}
		vm.cur.u.env.Captures[slot] = str(c, 1)
		return sobek.Undefined()
	})
	_ = g.Set("header", func(c sobek.FunctionCall) sobek.Value {
		name, value := str(c, 0), str(c, 1)
		if !validHeader(name, value) {
			panic(rt.NewTypeError("header(%q): not a valid header name and value", name))
		}
		u := vm.cur.u
		u.script.headers = append(u.script.headers, scriptHeader{name, value})
		return sobek.Undefined()
	})
	_ = g.Set("fail", func(c sobek.FunctionCall) sobek.Value {
		msg := str(c, 0)
		if len(c.Arguments) == 0 || msg == "" {
			msg = "fail() called"
		}
		vm.cur.failed = msg
		panic(rt.NewGoError(errScriptFail))
	})
	_ = g.Set("sha256", func(c sobek.FunctionCall) sobek.Value {
		h := sha256.Sum256([]byte(str(c, 0)))
		return rt.ToValue(hex.EncodeToString(h[:]))
	})
	_ = g.Set("hmac_sha256", func(c sobek.FunctionCall) sobek.Value {
		// Plans sign with one key, so the keyed state is kept and reset.
		if key := str(c, 0); vm.mac == nil || key != vm.macKey {
			vm.mac, vm.macKey = hmac.New(sha256.New, []byte(key)), key
		} else {
			vm.mac.Reset()
		}
		vm.mac.Write([]byte(str(c, 1)))
		var sum [sha256.Size]byte
		return rt.ToValue(hex.EncodeToString(vm.mac.Sum(sum[:0])))
	})
	_ = g.Set("base64", func(c sobek.FunctionCall) sobek.Value {
		return rt.ToValue(base64.StdEncoding.EncodeToString([]byte(str(c, 0))))
	})
	return vm
}

// call runs s for u and returns the failure's message, "" on success;
// stopped says the run's end interrupted it.
func (vm *jsVM) call(u *User, s *plan.Script) (msg string, stopped bool) {
	fn, ok := vm.fns[s]
	if !ok {
		v, err := vm.rt.RunProgram(s.Program)
		if err != nil {
			return "script: " + err.Error(), false
		}
		if fn, ok = sobek.AssertFunction(v); !ok {
			return "script: not a function", false
		}
		vm.fns[s] = fn
	}
	vm.cur.u, vm.cur.s = u, s
	// An interrupt meant for a runaway call that ended just before it
	// landed must not stop this one.
	vm.rt.ClearInterrupt()
	vm.mu.Lock()
	vm.owner = u
	vm.started.Store(time.Now().UnixNano())
	vm.mu.Unlock()
	_, err := fn(sobek.Undefined(), vm.args[:]...)
	vm.mu.Lock()
	vm.owner = nil
	vm.started.Store(0)
	vm.mu.Unlock()
	if err == nil {
		return "", false
	}
	if vm.cur.failed != "" {
		return vm.cur.failed, false
	}
	var ie *sobek.InterruptedError
	if errors.As(err, &ie) {
		vm.rt.ClearInterrupt()
		if _, ok := ie.Value().(memoryInterrupt); ok {
			if hit := u.prog.ScriptMemoryHit; hit != nil {
				hit(scriptMemoryMessage)
			}
			return scriptMemoryMessage, false
		}
		if u.interrupted.Load() {
			return "", true
		}
		return "script ran longer than " + time.Duration(scriptLimit.Load()).String() + " (an endless loop?) and was stopped", false
	}
	var ex *sobek.Exception
	if errors.As(err, &ex) {
		msg = ex.Value().String()
		for _, fr := range ex.Stack() {
			if p := fr.Position(); p.Line > 1 {
				msg += " (at " + s.At(p.Line-1, p.Column).String() + ")"
				break
			}
		}
		return msg, false
	}
	return err.Error(), false
}

func validHeader(name, value string) bool {
	if name == "" || strings.ContainsAny(value, "\r\n\x00") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// capturesObj is the script's captures: the user's values of the captures
// of earlier steps and of the script's sets, and the setup's captures,
// read-only (set() writes).
type capturesObj struct{ vm *jsVM }

func (c *capturesObj) Get(key string) sobek.Value {
	env := &c.vm.cur.u.env
	if slot, ok := c.vm.cur.s.Captures[key]; ok {
		return c.vm.rt.ToValue(env.Captures[slot])
	}
	if slot, ok := c.vm.cur.s.Globals[key]; ok && slot < len(env.Globals) {
		return c.vm.rt.ToValue(env.Globals[slot])
	}
	return nil
}

func (c *capturesObj) Set(key string, _ sobek.Value) bool {
	panic(c.vm.rt.NewTypeError("captures are read-only: use set(%q, value), with %q in the step's sets", key, key))
}

func (c *capturesObj) Has(key string) bool {
	_, ok := c.vm.cur.s.Captures[key]
	_, global := c.vm.cur.s.Globals[key]
	return ok || global
}

func (c *capturesObj) Delete(string) bool { return false }

func (c *capturesObj) Keys() []string {
	keys := make([]string, 0, len(c.vm.cur.s.Captures)+len(c.vm.cur.s.Globals))
	for k := range c.vm.cur.s.Captures {
		keys = append(keys, k)
	}
	for k := range c.vm.cur.s.Globals {
		keys = append(keys, k)
	}
	return keys
}

// varsObj is the plan's vars, read-only.
type varsObj struct{ vm *jsVM }

func (v *varsObj) vars() map[string]string { return v.vm.cur.u.prog.Plan.Vars }

func (v *varsObj) Get(key string) sobek.Value {
	s, ok := v.vars()[key]
	if !ok {
		return nil
	}
	return v.vm.rt.ToValue(s)
}

func (v *varsObj) Set(key string, _ sobek.Value) bool {
	panic(v.vm.rt.NewTypeError("vars are read-only"))
}

func (v *varsObj) Has(key string) bool {
	_, ok := v.vars()[key]
	return ok
}

func (v *varsObj) Delete(string) bool { return false }

func (v *varsObj) Keys() []string {
	keys := make([]string, 0, len(v.vars()))
	for k := range v.vars() {
		keys = append(keys, k)
	}
	return keys
}

// responseObj is the last response of the iteration: status (0 before
// any request), headers and body. The body is turned into a string only
// when the script reads it.
type responseObj struct {
	vm      *jsVM
	headers *sobek.Object
}

var responseKeys = []string{"status", "headers", "body"}

func (r *responseObj) Get(key string) sobek.Value {
	u, s := r.vm.cur.u, r.vm.cur.s
	switch key {
	case "status":
		if !s.AfterRequest {
			return r.vm.rt.ToValue(0)
		}
		return r.vm.rt.ToValue(u.resp.Status)
	case "headers":
		return r.headers
	case "body":
		if !s.AfterRequest {
			return r.vm.rt.ToValue("")
		}
		return r.vm.rt.ToValue(string(u.resp.Body))
	}
	return nil
}

func (r *responseObj) Set(string, sobek.Value) bool {
	panic(r.vm.rt.NewTypeError("response is read-only"))
}

func (r *responseObj) Has(key string) bool {
	for _, k := range responseKeys {
		if k == key {
			return true
		}
	}
	return false
}

func (r *responseObj) Delete(string) bool { return false }
func (r *responseObj) Keys() []string     { return responseKeys }

// headersObj is the last response's headers by name, any case.
type headersObj struct{ vm *jsVM }

func (h *headersObj) Get(key string) sobek.Value {
	if !h.vm.cur.s.AfterRequest {
		return nil
	}
	if v := h.vm.cur.u.resp.Get(key); v != nil {
		return h.vm.rt.ToValue(string(v))
	}
	return nil
}

func (h *headersObj) Set(string, sobek.Value) bool {
	panic(h.vm.rt.NewTypeError("response.headers are read-only: header(name, value) sets one for the next request"))
}

func (h *headersObj) Has(key string) bool {
	return h.vm.cur.s.AfterRequest && h.vm.cur.u.resp.Get(key) != nil
}

func (h *headersObj) Delete(string) bool { return false }

func (h *headersObj) Keys() []string {
	if !h.vm.cur.s.AfterRequest {
		return nil
	}
	var keys []string
	for _, f := range h.vm.cur.u.resp.Header {
		keys = append(keys, strings.ToLower(string(f.Name)))
	}
	return keys
}

// scriptLimit bounds one script call: scripts take microseconds, and one
// that loops for ever would otherwise hold its user (and worker) to the
// end of the run.
// It is atomic so tests can shorten it while the watchdog reads it.
var scriptLimit atomic.Int64 // ns

func init() { scriptLimit.Store(int64(5 * time.Second)) }

// The watchdog is one goroutine for all runtimes, not a timer per call:
// a call only stores its start time.
var watched struct {
	once sync.Once
	mu   sync.Mutex
	vms  []*jsVM
}

func watch(vm *jsVM) {
	watched.mu.Lock()
	watched.vms = append(watched.vms, vm)
	watched.mu.Unlock()
	watched.once.Do(func() { go watchdog() })
	startMemWatch()
}

func unwatch(vm *jsVM) {
	watched.mu.Lock()
	defer watched.mu.Unlock()
	for i, w := range watched.vms {
		if w == vm {
			last := len(watched.vms) - 1
			watched.vms[i], watched.vms[last] = watched.vms[last], nil
			watched.vms = watched.vms[:last]
			return
		}
	}
}

func watchdog() {
	for {
		limit := scriptLimit.Load()
		time.Sleep(min(time.Duration(limit/10), 100*time.Millisecond))
		now := time.Now().UnixNano()
		watched.mu.Lock()
		for _, vm := range watched.vms {
			if vm.started.Load() == 0 {
				continue
			}
			vm.mu.Lock()
			// The run's end interrupts users; a script does not look at
			// that itself, so a long call would outlast the grace.
			if t := vm.started.Load(); t != 0 && (now-t > limit || vm.owner.interrupted.Load()) {
				vm.rt.Interrupt("script time limit")
			}
			vm.mu.Unlock()
		}
		watched.mu.Unlock()
	}
}
