package run

import (
	"context"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/vu"
)

// A connection's session as the driver sees it: it connects, lets the
// scenario's user (vu.ConnUser) run its hub calls or WebSocket steps up
// to a hold, and closes, on a goroutine the controller (connections.go)
// hands its slot to. What the user sends, waits for, captures and how it
// fails is vu's; what is counted, retried and when is this package's.

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
	h := p.hubs[s.hub]
	c, err := p.user.ConnectHub(ctx, h.url, h.sro, s.env)
	if err != nil {
		p.failedAttempt(err)
		h.failed.Add(1)
		p.retryLater(s, err)
		return
	}
	p.opened.Add(1)
	h.opened.Add(1)
	if err := p.user.RunCalls(ctx, c, s.env); err != nil {
		// Recorded under the call's step; the connection is of no use
		// to the scenario without it, so start over. A call cut short
		// by the run's end leaves a connection open at the end.
		if ctx.Err() != nil {
			_ = c.CloseAtEnd() // the call's failure is recorded; nothing is left to do
		} else {
			c.Close()
		}
		p.retryLater(s, nil)
		return
	}
	s.sr, s.since = c, time.Now()
	p.holding(s, p.spec.SignalR.Hold)
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
	c, err := p.user.DialWS(ctx, p.wso, s.env)
	if err != nil {
		p.failedAttempt(err)
		p.retryLater(s, err)
		return
	}
	p.opened.Add(1)
	raisePeak(&p.peak, p.wsOp.Add(1))
	s.wc, s.since, s.pc = c, time.Now(), 0
	p.runSteps(ctx, s)
}

// runSteps runs the user's script from s.pc until a hold (the slot is
// handed back holding), the end of the script or a close (the slot
// connects again at once), or a failure (the slot reconnects after the
// reconnect delay).
func (p *population) runSteps(ctx context.Context, s *slot) {
	end := p.user.RunScript(ctx, s.wc, &s.pc, s.env)
	switch end.Stop {
	case vu.ScriptHold:
		p.holding(s, end.Hold)
	case vu.ScriptFailed:
		p.failStep(s, end.Interrupted)
	default: // a close step, or the script ran out
		p.closeWS(s, end.Code, end.Reason, false)
		p.drop(s)
		s.state = slotIdle
	}
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
