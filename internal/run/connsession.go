package run

import (
	"context"
	"errors"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/vu"
)

// A connection's session: it connects, runs its hub calls or WebSocket
// steps up to a hold, and closes, on a goroutine the controller
// (connections.go) hands its slot to.

// connect opens the slot's connection and runs its calls or steps up to a
// hold. Runs on a goroutine of its own.
func (p *population) connect(ctx context.Context, s *slot) {
	s.env.Iter = s.iter
	s.iter++
	switch {
	case p.sro != nil:
		p.connectSignalR(ctx, s)
	default:
		p.connectWS(ctx, s)
	}
}

func (p *population) connectSignalR(ctx context.Context, s *slot) {
	spec := p.spec.SignalR
	h := p.hubs[s.hub]
	c, err := signalr.Connect(ctx, vu.ConnectionURL(p.base, h.url, s.env), vu.ConnectionHeaders(p.plan, spec.Headers, s.env), h.sro)
	if err != nil {
		p.failedAttempt(err)
		h.failed.Add(1)
		p.retryLater(s, err)
		return
	}
	p.opened.Add(1)
	h.opened.Add(1)
	for _, call := range spec.Calls {
		if err := p.call(ctx, c, call, s.env); err != nil {
			// Recorded under the call's step; the connection is of no
			// use to the scenario without it, so start over. A call cut
			// short by the run's end leaves a connection open at the end.
			if ctx.Err() != nil {
				_ = c.CloseAtEnd() // the call's failure is recorded; nothing is left to do
			} else {
				c.Close()
			}
			p.retryLater(s, nil)
			return
		}
	}
	s.sr, s.since = c, time.Now()
	p.holding(s, spec.Hold)
}

func (p *population) call(ctx context.Context, c *signalr.Conn, call plan.HubCall, env *plan.Env) error {
	args, err := vu.HubArgs(&call, env)
	if err != nil {
		// The template renders valid JSON by construction; a bad one is
		// still counted rather than dropped, with no latency: nothing
		// was sent.
		p.rec.Unsent(callOp(call), sample.Other, err)
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

func (p *population) holding(s *slot, d time.Duration) {
	// It connected and did what the scenario asked: a well-behaved client
	// starts its backoff afresh.
	s.fails = 0
	s.state, s.until = slotHolding, time.Time{}
	if d > 0 {
		s.until = time.Now().Add(d)
	}
}

// retryLater drops s's connection and sets it waiting to retry; err is
// the failed attempt's (its Retry-After counts), nil for a failure after
// connecting.
func (p *population) retryLater(s *slot, err error) {
	p.drop(s)
	p.waitToRetry(s, err, time.Now())
}

// holdOver runs when a hold ends: a SignalR connection closes (and the
// slot connects again); a WebSocket script goes on after its hold step.
func (p *population) holdOver(ctx context.Context, s *slot) {
	if s.wc != nil {
		p.runSteps(ctx, s)
		return
	}
	p.closeSlot(ctx, s)
}

// closeSlot ends a held connection politely (a ramp down): the session
// was a success.
func (p *population) closeSlot(_ context.Context, s *slot) { p.closeHeld(s, false) }

// closeHeld closes a held connection; atEnd: because the run ended, so
// it counts as open at the end rather than as a disconnect.
func (p *population) closeHeld(s *slot, atEnd bool) {
	switch {
	case s.sr != nil:
		if d := s.sr.Disconnect(); d != nil {
			// It ended on its own before we came to close it.
			p.rec.Record(signalr.OpSession, d.Class, time.Since(s.since), d)
		} else {
			p.rec.Record(signalr.OpSession, sample.OK, time.Since(s.since), nil)
			if atEnd {
				_ = s.sr.CloseAtEnd() // the session is recorded; nothing is left to do
			} else {
				s.sr.Close()
			}
		}
	case s.wc != nil:
		p.closeWS(s, 1000, "", atEnd)
	}
	p.drop(s)
	s.state = slotIdle
}

func (p *population) closeWS(s *slot, code int, reason string, atEnd bool) {
	if d := s.wc.Disconnect(); d != nil {
		// It ended on its own before we came to close it.
		p.rec.RecordWS(ws.OpSession, d.Class, time.Since(s.since), d)
		p.wsEnded(d, false)
		return
	}
	p.rec.RecordWS(ws.OpSession, sample.OK, time.Since(s.since), nil)
	s.wc.Close(code, reason)
	p.wsEnded(s.wc.Disconnect(), atEnd)
}

func (p *population) connectWS(ctx context.Context, s *slot) {
	spec := p.spec.WebSocket
	c, err := ws.Dial(ctx, vu.ConnectionURL(p.base, spec.URL, s.env), vu.ConnectionHeaders(p.plan, spec.Headers, s.env), p.wso, nil)
	if err != nil {
		p.failedAttempt(err)
		p.rec.RecordWS(ws.OpUpgrade, ws.Classify(err), 0, err)
		p.retryLater(s, err)
		return
	}
	p.opened.Add(1)
	raisePeak(&p.peak, p.wsOp.Add(1))
	p.rec.RecordWS(ws.OpUpgrade, sample.OK, c.Timing.Upgrade, nil)
	s.wc, s.since, s.pc = c, time.Now(), 0
	for i := range s.env.Captures {
		s.env.Captures[i] = ""
	}
	p.runSteps(ctx, s)
}

// runSteps runs the script from s.pc until a hold (the slot is handed back
// holding), the end of the script or a close (the slot connects again at
// once), or a failure (the slot reconnects after the reconnect delay).
func (p *population) runSteps(ctx context.Context, s *slot) {
	steps := p.spec.WebSocket.Steps
	var armed *ws.Waiter
	for s.pc < len(steps) {
		st := &steps[s.pc]
		s.pc++
		switch st.Kind {
		case plan.WSHold:
			p.holding(s, st.Hold)
			return
		case plan.WSClose:
			p.closeWS(s, st.Code, st.Reason, false)
			p.drop(s)
			s.state = slotIdle
			return
		case plan.WSSend:
			if s.pc < len(steps) && steps[s.pc].Kind == plan.WSWait {
				// Arm the wait before sending, so a quick answer cannot
				// slip past unseen.
				armed = s.wc.Expect(matcher(&steps[s.pc]))
			}
			typ := ws.Text
			if st.Binary {
				typ = ws.Binary
			}
			t0 := time.Now()
			err := s.wc.Send(typ, vu.AppendSend(nil, st, s.env))
			p.rec.RecordWS(ws.StepOp(st.Name), ws.Classify(err), time.Since(t0), err)
			if err != nil {
				p.failStep(s, false)
				return
			}
		case plan.WSWait:
			err := p.wait(ctx, s, st, armed)
			armed = nil
			if err != nil {
				p.failStep(s, ctx.Err() != nil)
				return
			}
		}
	}
	// The script ran out: close, and start it again.
	p.closeWS(s, 1000, "", false)
	p.drop(s)
	s.state = slotIdle
}

// wait runs a wait step on armed (nil: a wait it arms now), takes its
// captures from the message, and records the step.
func (p *population) wait(ctx context.Context, s *slot, st *plan.WSStep, armed *ws.Waiter) error {
	w := armed
	if w == nil {
		w = s.wc.Expect(matcher(st))
	}
	wctx, cancel := context.WithTimeout(ctx, st.Timeout)
	t0 := time.Now()
	msg, err := w.Wait(wctx)
	cancel()
	d := time.Since(t0)
	if err == nil {
		err = vu.CaptureMessage(p.plan, st.Captures, msg, s.env)
	}
	cl := ws.Classify(err)
	var ce *vu.CaptureError
	if errors.As(err, &ce) {
		cl = sample.Capture
	}
	if err != nil && ctx.Err() != nil {
		cl = sample.Interrupted
	}
	p.rec.RecordWS(ws.StepOp(st.Name), cl, d, err)
	return err
}

// failStep ends the connection after a failed step (the step has the
// failure; the session is not counted again). atEnd: the step failed
// because the run ended, so a connection still open is open at the end.
func (p *population) failStep(s *slot, atEnd bool) {
	open := s.wc.Disconnect() == nil
	if open {
		s.wc.Close(1000, "")
	}
	p.wsEnded(s.wc.Disconnect(), atEnd && open)
	p.retryLater(s, nil)
}

func matcher(st *plan.WSStep) ws.Matcher {
	return ws.Matcher{Path: st.Path, Equals: st.Equals, Regex: st.Regex}
}
