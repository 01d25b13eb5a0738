package vu

import (
	"context"
	"errors"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// A connection scenario's user (WebSocket, SignalR) is written here, next
// to the HTTP user, so one package owns what every kind of user does: what
// it sends on connecting, its hub calls, its script of sends and waits,
// what it captures and with which words it fails. The driver
// (internal/run's slots) owns only when a connection is opened, held,
// retried and closed, and what is counted about it.
//
// One ConnUser serves a whole population: it keeps nothing per
// connection, so a fleet of tens of thousands of held connections costs
// no more than before. What is per connection (its env, its place in the
// script) the driver keeps in its slot and passes in.

// ConnRecorder records the steps a connection's user takes: a WebSocket
// upgrade, send or wait (RecordWS), and a hub call that never went out
// (Unsent). The SignalR client records its own operations.
type ConnRecorder interface {
	RecordWS(op ws.Op, class sample.Class, d time.Duration, err error)
	Unsent(op signalr.Op, class sample.Class, err error)
}

// ConnUser is the user of one connection scenario.
type ConnUser struct {
	plan *plan.Plan // notes the credentials it sends and captures
	base string     // the plan's target, for URLs that render a path
	spec *plan.Connection
	rec  ConnRecorder
}

// NewConnUser is the user of the connection scenario spec of plan p,
// recording its steps with rec; base is the plan's target.
func NewConnUser(p *plan.Plan, base string, spec *plan.Connection, rec ConnRecorder) *ConnUser {
	return &ConnUser{plan: p, base: base, spec: spec, rec: rec}
}

// ConnectHub opens a SignalR connection to the hub at hubURL with its
// handshake headers rendered for env. The client records negotiate and
// the handshake under o.
func (u *ConnUser) ConnectHub(ctx context.Context, hubURL *plan.Template, o *signalr.Options, env *plan.Env) (*signalr.Conn, error) {
	return signalr.Connect(ctx, ConnectionURL(u.base, hubURL, env), ConnectionHeaders(u.plan, u.spec.SignalR.Headers, env), o)
}

// RunCalls makes the scenario's hub calls on c in order, up to the first
// that fails (recorded under its step; the connection is of no use to the
// scenario without it).
func (u *ConnUser) RunCalls(ctx context.Context, c *signalr.Conn, env *plan.Env) error {
	calls := u.spec.SignalR.Calls
	for i := range calls {
		if err := u.Invoke(ctx, c, &calls[i], env); err != nil {
			return err
		}
	}
	return nil
}

// Invoke makes one hub call on c with its arguments rendered for env,
// within its timeout.
func (u *ConnUser) Invoke(ctx context.Context, c *signalr.Conn, call *plan.HubCall, env *plan.Env) error {
	args, err := HubArgs(call, env)
	if err != nil {
		// The template renders valid JSON by construction; a bad one is
		// still counted rather than dropped, with no latency: nothing
		// was sent.
		u.rec.Unsent(CallOp(call), sample.Other, err)
		return err
	}
	if call.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, call.Timeout)
		defer cancel()
	}
	switch call.Mode {
	case plan.HubSend:
		err = c.Send(call.Method, args...)
	case plan.HubStream:
		_, err = c.Stream(ctx, call.Method, args, nil)
	default:
		_, err = c.Invoke(ctx, call.Method, args...)
	}
	return err
}

// CallOp is the op a scripted hub call is recorded under.
func CallOp(call *plan.HubCall) signalr.Op {
	switch call.Mode {
	case plan.HubSend:
		return signalr.SendOp(call.Method)
	case plan.HubStream:
		return signalr.StreamOp(call.Method)
	}
	return signalr.InvokeOp(call.Method)
}

// DialWS opens the scenario's WebSocket connection with o and records
// its upgrade. A new connection starts its script afresh: env's captures
// from the last one are forgotten.
func (u *ConnUser) DialWS(ctx context.Context, o *ws.Options, env *plan.Env) (*ws.Conn, error) {
	spec := u.spec.WebSocket
	c, err := ws.Dial(ctx, ConnectionURL(u.base, spec.URL, env), ConnectionHeaders(u.plan, spec.Headers, env), o, nil)
	if err != nil {
		u.rec.RecordWS(ws.OpUpgrade, ws.Classify(err), 0, err)
		return nil, err
	}
	u.rec.RecordWS(ws.OpUpgrade, sample.OK, c.Timing.Upgrade, nil)
	for i := range env.Captures {
		env.Captures[i] = ""
	}
	return c, nil
}

// ScriptStop is why a WebSocket script handed its connection back.
type ScriptStop uint8

const (
	ScriptHold   ScriptStop = iota // a hold step: hold the connection for Hold (0: to the end)
	ScriptClose                    // a close step: close with Code and Reason
	ScriptDone                     // the script ran out: close normally and start again
	ScriptFailed                   // a step failed (it is recorded); the connection is of no use
)

// ScriptEnd is where a script stopped and what the driver is to do.
type ScriptEnd struct {
	Stop   ScriptStop
	Hold   time.Duration
	Code   int
	Reason string
	// Interrupted: the step failed because ctx ended (the run's end), so
	// the connection, if still open, is open at the end.
	Interrupted bool
}

// RunScript runs the scenario's WebSocket steps on c from *pc (advanced
// past each step it runs) until a hold, a close, the script's end or a
// failed step.
func (u *ConnUser) RunScript(ctx context.Context, c *ws.Conn, pc *int, env *plan.Env) ScriptEnd {
	steps := u.spec.WebSocket.Steps
	var armed *ws.Waiter
	for *pc < len(steps) {
		st := &steps[*pc]
		*pc++
		switch st.Kind {
		case plan.WSHold:
			return ScriptEnd{Stop: ScriptHold, Hold: st.Hold}
		case plan.WSClose:
			return ScriptEnd{Stop: ScriptClose, Code: st.Code, Reason: st.Reason}
		case plan.WSSend:
			if *pc < len(steps) && steps[*pc].Kind == plan.WSWait {
				// Arm the wait before sending, so a quick answer cannot
				// slip past unseen.
				armed = c.Expect(matcher(&steps[*pc]))
			}
			if err := u.send(c, st, env); err != nil {
				return ScriptEnd{Stop: ScriptFailed}
			}
		case plan.WSWait:
			err := u.wait(ctx, c, st, armed, env)
			armed = nil
			if err != nil {
				return ScriptEnd{Stop: ScriptFailed, Interrupted: ctx.Err() != nil}
			}
		}
	}
	return ScriptEnd{Stop: ScriptDone, Code: 1000}
}

// send runs a send step and records it.
func (u *ConnUser) send(c *ws.Conn, st *plan.WSStep, env *plan.Env) error {
	typ := ws.Text
	if st.Binary {
		typ = ws.Binary
	}
	t0 := time.Now()
	err := c.Send(typ, AppendSend(nil, st, env))
	u.rec.RecordWS(ws.StepOp(st.Name), ws.Classify(err), time.Since(t0), err)
	return err
}

// wait runs a wait step on armed (nil: a wait it arms now), takes its
// captures from the message, and records the step.
func (u *ConnUser) wait(ctx context.Context, c *ws.Conn, st *plan.WSStep, armed *ws.Waiter, env *plan.Env) error {
	w := armed
	if w == nil {
		w = c.Expect(matcher(st))
	}
	wctx, cancel := context.WithTimeout(ctx, st.Timeout)
	t0 := time.Now()
	msg, err := w.Wait(wctx)
	cancel()
	d := time.Since(t0)
	if err == nil {
		err = CaptureMessage(u.plan, st.Captures, msg, env)
	}
	cl := ws.Classify(err)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		cl = sample.Interrupted
	case isCaptureError(err):
		cl = sample.Capture
	}
	u.rec.RecordWS(ws.StepOp(st.Name), cl, d, err)
	return err
}

// isCaptureError reports whether err is a capture's. Apart from wait, so
// only a failed wait pays for errors.As's target on the heap, not every
// wait of every connection.
func isCaptureError(err error) bool {
	var ce *CaptureError
	return errors.As(err, &ce)
}

func matcher(st *plan.WSStep) ws.Matcher {
	return ws.Matcher{Path: st.Path, Equals: st.Equals, Regex: st.Regex}
}
