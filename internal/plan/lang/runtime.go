package lang

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
)

// The script runtime: a compiled script (Program) runs on a runtime
// borrowed for the call. A JavaScript runtime costs hundreds of KiB, which
// is why k6 pays megabytes per virtual user; here runtimes belong to no
// user: a call takes one from a free list and gives it back, so a run
// holds about as many as calls run at once (the workers), whatever its
// user count. What a user keeps between calls is its own (Host).

// Host is a script call's view of its caller: what the script reads (its
// captures, the plan's vars, the last response) and where what it sets
// goes. The runtime keeps nothing of a Host after the call.
type Host interface {
	// Capture is a capture the script may read by name; CaptureKeys
	// lists them.
	Capture(name string) (string, bool)
	CaptureKeys() []string
	// SetCapture stores set(name, value): false when the script may not
	// set name.
	SetCapture(name, value string) bool
	// AddHeader takes header(name, value), already checked, for the next
	// request.
	AddHeader(name, value string)
	// Var is one of the plan's vars; VarKeys lists them.
	Var(name string) (string, bool)
	VarKeys() []string
	// Status is the last response's status (0: none); Body its body;
	// Header its header of a name in any case (ok false: none), and
	// HeaderNames the names it has, in lower case. HasResponse says there
	// is one to read.
	HasResponse() bool
	Status() int
	Body() []byte
	Header(name string) ([]byte, bool)
	HeaderNames() []string
	// Interrupted says the run's end cut the caller off: the call is
	// stopped, and nothing failed.
	Interrupted() bool
	// At says where the script's line and column (1-based, counted in
	// the function's body) are in the plan.
	At(line, col int) string
}

// Outcome is how a call ended.
type Outcome uint8

// Outcomes of Run.
const (
	Done Outcome = iota
	// Failed: the script called fail(), threw, set what it may not or
	// ran past its time limit; the message says which.
	Failed
	// Stopped: the run's end cut the call off; nothing failed.
	Stopped
	// OutOfMemory: the heap grew past the budget under the call, which was
	// stopped (scriptmem.go); the message says so.
	OutOfMemory
)

// Run calls the function p compiles to for h, on a runtime from the free
// list, and returns how it ended and, unless Done or Stopped, why.
func Run(p *Program, h Host) (Outcome, string) {
	vm := getVM()
	out, msg := vm.call(p, h)
	putVM(vm)
	return out, msg
}

// ScriptTimeLimit bounds one script call, in ns: scripts take
// microseconds, and one that loops for ever would otherwise hold its user
// (and worker) to the end of the run. It is atomic so that a test can
// shorten it while the watchdog reads it.
var ScriptTimeLimit atomic.Int64

func init() { ScriptTimeLimit.Store(int64(5 * time.Second)) }

// jsVM is a runtime with the script API installed. The objects a script
// sees (captures, vars, response) are made once per runtime and read the
// calling host through cur, so a call builds no objects of its own.
type jsVM struct {
	rt  *sobek.Runtime
	fns map[*Program]sobek.Callable
	// args are captures, vars and response.
	args [3]sobek.Value
	// started is when the call in progress began (Unix ns; 0: idle), for
	// the watchdog.
	started atomic.Int64
	// owner is the host of the call in progress (nil: idle), so the
	// watchdog can stop a call whose user the run's end interrupted. mu
	// orders the watchdog's interrupt with the call's start and end: an
	// interrupt lands only while its call runs, or before the next call
	// clears it.
	mu    sync.Mutex
	owner Host
	// memCall and memBase are the memory watch's (scriptmem.go), under
	// mu: the call it last saw (its start) and the heap when it saw it.
	memCall, memBase int64
	// mac is hmac_sha256's state for macKey.
	mac    hash.Hash
	macKey string
	cur    struct {
		h      Host
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
	vm.cur.h, vm.cur.failed = nil, ""
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
		panic("lang: bounding the script builtins: " + err.Error()) // a bug in boundStrings or boundBulk
	}
	vm := &jsVM{rt: rt, fns: map[*Program]sobek.Callable{}}
	watch(vm)
	vm.args[0] = rt.NewDynamicObject(&capturesObj{vm})
	vm.args[1] = rt.NewDynamicObject(&varsObj{vm})
	vm.args[2] = rt.NewDynamicObject(&responseObj{vm: vm, headers: rt.NewDynamicObject(&headersObj{vm})})
	vm.installAPI()
	return vm
}

// installAPI sets the script API's functions on the runtime's global.
// Native functions take sobek.FunctionCall: a plain Go signature would be
// called through reflection, several times slower per call. Set fails only
// on a frozen or non-extensible object; the global of a fresh runtime is
// neither.
func (vm *jsVM) installAPI() {
	rt := vm.rt
	g := rt.GlobalObject()
	str := func(c sobek.FunctionCall, i int) string { return c.Argument(i).String() }
	_ = g.Set("set", func(c sobek.FunctionCall) sobek.Value {
		name := str(c, 0)
		if !vm.cur.h.SetCapture(name, str(c, 1)) {
			panic(rt.NewTypeError("set(%q): the step's sets list does not name it", name))
		}
		return sobek.Undefined()
	})
	_ = g.Set("header", func(c sobek.FunctionCall) sobek.Value {
		name, value := str(c, 0), str(c, 1)
		if !validHeader(name, value) {
			panic(rt.NewTypeError("header(%q): not a valid header name and value", name))
		}
		vm.cur.h.AddHeader(name, value)
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
}

// call runs p for h.
func (vm *jsVM) call(p *Program, h Host) (Outcome, string) {
	fn, ok := vm.fns[p]
	if !ok {
		v, err := vm.rt.RunProgram(p)
		if err != nil {
			return Failed, "script: " + err.Error()
		}
		if fn, ok = sobek.AssertFunction(v); !ok {
			return Failed, "script: not a function"
		}
		vm.fns[p] = fn
	}
	vm.cur.h = h
	// An interrupt meant for a runaway call that ended just before it
	// landed must not stop this one.
	vm.rt.ClearInterrupt()
	vm.mu.Lock()
	vm.owner = h
	vm.started.Store(time.Now().UnixNano())
	vm.mu.Unlock()
	_, err := fn(sobek.Undefined(), vm.args[:]...)
	vm.mu.Lock()
	vm.owner = nil
	vm.started.Store(0)
	vm.mu.Unlock()
	if err == nil {
		return Done, ""
	}
	return vm.ended(err, h)
}

// ended says how a call that returned err ended.
func (vm *jsVM) ended(err error, h Host) (Outcome, string) {
	if vm.cur.failed != "" {
		return Failed, vm.cur.failed
	}
	var ie *sobek.InterruptedError
	if errors.As(err, &ie) {
		vm.rt.ClearInterrupt()
		if _, ok := ie.Value().(memoryInterrupt); ok {
			return OutOfMemory, scriptMemoryMessage
		}
		if h.Interrupted() {
			return Stopped, ""
		}
		return Failed, "script ran longer than " + time.Duration(ScriptTimeLimit.Load()).String() + " (an endless loop?) and was stopped"
	}
	var ex *sobek.Exception
	if errors.As(err, &ex) {
		msg := ex.Value().String()
		for _, fr := range ex.Stack() {
			// Line 1 is the function's wrapper, not the plan's text.
			if p := fr.Position(); p.Line > 1 {
				msg += " (at " + h.At(p.Line-1, p.Column) + ")"
				break
			}
		}
		return Failed, msg
	}
	return Failed, err.Error()
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
		limit := ScriptTimeLimit.Load()
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
			if t := vm.started.Load(); t != 0 && (now-t > limit || vm.owner.Interrupted()) {
				vm.rt.Interrupt("script time limit")
			}
			vm.mu.Unlock()
		}
		watched.mu.Unlock()
	}
}
