package vu

import (
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/sample"
)

// This file is what the event-loop engine (internal/evloop) needs of a
// user: it sends the requests itself, and records each outcome through
// finish, as do does, so both engines judge and count alike.

// LoopSupports is what the event-loop engine can run (features.go):
// HTTP/1.1 request steps to one http:// endpoint, or https:// under
// http.version http/1.1 (FeatHTTPSNegotiated it does not speak), whose
// bytes are the same for every user and iteration, checked on the status
// only.
// A feature not listed here sends the plan to the goroutine engine.
var LoopSupports = NewFeatureSet(FeatRequest, FeatHTTPS)

// LoopIneligible says why the event-loop engine cannot run this program's
// users ("" when it can): the first feature it needs that LoopSupports
// lacks.
func (p *Program) LoopIneligible() string { return p.Unsupported(LoopSupports) }

// LoopAddr is the host:port of the one endpoint of a program the loop can
// run ("" when none).
func (p *Program) LoopAddr() string {
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			if st.endpoint != nil {
				return st.endpoint.Addr
			}
		}
	}
	return ""
}

// LoopRequest renders the request of st, whose bytes every user sends
// (LoopIneligible vouched for that), into req and returns its bytes.
func (p *Program) LoopRequest(st *Step, req *httpc.Request, rec *metrics.Recorder) ([]byte, error) {
	u := p.NewUser(0, nil, rec)
	if err := u.build(st); err != nil {
		return nil, err
	}
	*req = u.req
	return httpc.AppendRequest(nil, &u.req), nil
}

// LoopBegin counts the start of an iteration the engine runs.
func (u *User) LoopBegin() {
	u.env.Iter = u.iter
	u.iter++
	u.shard.Started(0)
}

// LoopResponse is where the engine parses this user's answers to.
func (u *User) LoopResponse() *httpc.Response { return &u.resp }

// LoopCustom renders st for this user alone when its answers gave it
// cookies (nil: the shared bytes are this user's too), appending to b.
func (u *User) LoopCustom(st *Step, b []byte) ([]byte, error) {
	if u.redir != nil && u.redir.loopDue {
		// The next hop of st's redirects, made ready by LoopDone.
		u.redir.loopDue = false
		return httpc.AppendRequest(b[:0], &u.req), nil
	}
	if u.jar == nil {
		return nil, nil
	}
	if err := u.build(st); err != nil {
		return nil, err
	}
	u.req.KeepHead = u.keepHead()
	return httpc.AppendRequest(b[:0], &u.req), nil
}

// LoopDone records the outcome of st's request sent at sent: err is the
// engine's transport error, else LoopResponse holds the answer. It
// reports whether the iteration goes on. A failure's sample shows the
// request as rendered for this user.
func (u *User) LoopDone(st *Step, err error, sent time.Time, latency time.Duration) bool {
	hopping := u.redir != nil && u.redir.loopHops > 0
	if u.redir != nil {
		u.redir.loopDue = false
	}
	redirect := err == nil && isRedirect(&u.resp) && u.prog.Plan.HTTP.RedirectLimit(st.Step) > 0
	// finish reads the request where it samples a failure or stores
	// cookies; the shared bytes have no User of their own. A hop's
	// request is u.req already (redirect.go).
	if !hopping && (redirect || err != nil || u.shard.Failures() != nil || u.jar != nil || u.resp.Get("Set-Cookie") != nil) {
		// build fails only for a URL whose origin is rendered per user,
		// which the loop never runs (stepNeeds: FeatDynamicOrigin): its
		// steps' origins are fixed, so nothing is lost here.
		_ = u.build(st)
	}
	if redirect {
		u.loopRedirect(st, sent, latency) // redirect.go
		return false
	}
	if hopping {
		u.redir.loopHops = 0
	}
	return u.finish(st, err, sent, latency)
}

// LoopUnsent counts st's request, which the engine never sent (its loop
// failed first), as unfinished, as a request the run's end cut off is,
// not as one that failed; a redirect hop that was due goes with it.
func (u *User) LoopUnsent(st *Step) {
	if u.redir != nil {
		u.redir.loopDue, u.redir.loopHops = false, 0
	}
	u.shard.RecordUnfinished(st.ID, sample.Interrupted)
}

// LoopRedirectDue says the step just finished answered with a redirect
// the loop is to follow: it sends the step again, and LoopCustom renders
// the next hop.
func (u *User) LoopRedirectDue() bool { return u.redir != nil && u.redir.loopDue }

// LoopEnd ends an iteration the engine ran. Its header storage stays with
// the user, which is never idle between iterations.
func (u *User) LoopEnd() {}

// Interrupted says the run's end cut this user off (Interrupt).
func (u *User) Interrupted() bool { return u.interrupted.Load() }

// LoopSteps are the request steps of sc, in order.
func (sc *Scenario) LoopSteps() []*Step { return sc.Steps }

// LoopBeginAt counts the start of an open-model arrival's iteration the
// engine runs, due at intended: its lateness, as Begin counts it.
func (u *User) LoopBeginAt(intended time.Time) {
	u.env.Iter = u.iter
	u.iter++
	u.shard.Started(time.Since(intended))
}
