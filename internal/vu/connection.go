package vu

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

	"github.com/stampede-load/stampede/internal/plan"
)

// A connection scenario's slots (WebSocket, SignalR) render their URL,
// sends and hub-call arguments here, from the same plan.Env a user's
// requests render from, so a template reads the same in a request body as
// in a WebSocket send: {{ vu }}, {{ tenant }}, {{ iter }}, vars, captures,
// expressions, and {{ uuid }} and rand_int drawn from a generator seeded by
// the run's seed.

// connStream keeps a slot's draws apart from every user's: users draw from
// PCG(vu, seed), a slot of the population at index pop from PCG(slot,
// seed ^ (pop+1)·φ), so {{ uuid }} of connection 1 is not user 1's.
const connStream = 0x9e3779b97f4a7c15

// ConnectionEnv is the template environment of slot (from 1) of the
// connection population at index pop: its {{ vu }} and {{ tenant }}, room
// for captures, and random draws the run's seed reproduces.
func (p *Program) ConnectionEnv(pop int, slot int64, tenant, captures int) *plan.Env {
	env := &plan.Env{Tenant: tenant, VU: slot, Globals: p.globals}
	env.Rand = rand.New(rand.NewPCG(uint64(slot), p.Seed^(uint64(pop+1)*connStream)))
	if captures > 0 {
		env.Captures = make([]string, captures)
	}
	return env
}

// ConnectionURL renders a connection's URL, joined to base (the plan's
// target) when it renders a path.
func ConnectionURL(base string, t *plan.Template, env *plan.Env) string {
	u := t.String(env)
	if strings.HasPrefix(u, "/") {
		return base + u
	}
	return u
}

// AppendSend renders a WebSocket send step's body onto dst.
func AppendSend(dst []byte, st *plan.WSStep, env *plan.Env) []byte {
	return st.Body.Append(dst, env)
}

// HubArgs renders a hub call's arguments (a JSON array template) into the
// values the call sends, each as the JSON text it rendered to, so numbers
// go out as written.
func HubArgs(call *plan.HubCall, env *plan.Env) ([]any, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(call.Args.Append(nil, env), &raw); err != nil {
		return nil, err
	}
	args := make([]any, len(raw))
	for i, a := range raw {
		args[i] = a
	}
	return args, nil
}
