package vu

import (
	"fmt"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// This file is what the event-loop engine (internal/evloop) needs of a
// user: it sends the requests itself, and records each outcome through
// finish, as do does, so both engines judge and count alike.

// LoopIneligible says why the event-loop engine cannot run this program's
// users ("" when it can): every scenario must be plain HTTP/1.1 request
// steps to one http:// endpoint whose bytes are the same for every user
// and iteration, with no think, captures, data, scripts or control flow,
// and checks on the status only.
func (p *Program) LoopIneligible() string {
	h := p.Plan.HTTP
	switch {
	case h.H2C:
		return "http.version asks for h2c"
	case len(h.SourceAddresses) > 0:
		return "http.source_addresses is set"
	case h.MaxConnsPerHost > 0:
		return "http.max_connections_per_host is set"
	case h.Reuse != plan.ReuseKeepAlive:
		return "http.connection is not keep-alive"
	}
	var ep *httpc.Endpoint
	for _, sc := range p.Scenarios {
		if sc.Connection != nil {
			return fmt.Sprintf("scenario %q holds connections", sc.Name)
		}
		if len(sc.DataUsed) > 0 {
			return fmt.Sprintf("scenario %q reads data", sc.Name)
		}
		if sc.Flow.RenewOn != nil {
			return fmt.Sprintf("scenario %q renews on a status", sc.Name)
		}
		for _, st := range sc.Steps {
			if why := loopStep(st); why != "" {
				return fmt.Sprintf("scenario %q step %q: %s", sc.Name, st.Name, why)
			}
			if ep == nil {
				ep = st.endpoint
			} else if ep != st.endpoint {
				return fmt.Sprintf("scenario %q step %q: a second endpoint", sc.Name, st.Name)
			}
		}
	}
	return ""
}

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

func loopStep(st *Step) string {
	switch {
	case st.Kind != plan.StepRequest:
		return "not a request step (think, script or control flow)"
	case st.dynamicURL || st.endpoint == nil:
		return "its URL's origin is templated"
	case st.endpoint.Scheme != "http":
		return "not plain http://"
	case !st.URL.Static():
		return "its URL is templated"
	case len(st.Captures) > 0:
		return "it captures"
	case st.keepBody || len(st.Expect.BodyContains) > 0 || len(st.Expect.JSON) > 0:
		return "it checks the body"
	case st.Body != nil && !st.Body.Static(), st.Gzip:
		return "its body is rendered per request"
	}
	for _, q := range st.Query {
		if !q.Value.Static() {
			return "its query is templated"
		}
	}
	for _, h := range st.Headers {
		if !h.Value.Static() {
			return "a header is templated"
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
	// finish reads the request where it samples a failure or stores
	// cookies; the shared bytes have no User of their own.
	if err != nil || u.shard.Failures() != nil || u.jar != nil || u.resp.Get("Set-Cookie") != nil {
		u.build(st)
	}
	return u.finish(st, err, sent, latency)
}

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
