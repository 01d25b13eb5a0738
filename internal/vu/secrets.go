package vu

import "github.com/stampede-load/stampede/internal/plan"

// maxNoted bounds a user's memory of the credentials it has noted; past
// it the user starts over (noting again costs one lookup in the plan).
const maxNoted = 64

// secretHeaderIndexes are the headers of st whose rendered values are
// credentials to note as they are sent: secret headers that are not
// literal (literal ones are secrets from the plan's load on).
func secretHeaderIndexes(p *plan.Plan, st *plan.Step) []int {
	var out []int
	for i, h := range st.Headers {
		if p.IsSecretHeader(h.Name) && !h.Value.Static() {
			out = append(out, i)
		}
	}
	return out
}

// noteSentSecrets notes the credentials of the request just built, before
// it is sent: a server echoing it on an error page then finds them hidden
// in every message and sample (plan.NoteSecretHeader). scriptHeaders is how
// many headers a script added after the step's own.
func (u *User) noteSentSecrets(st *Step, scriptHeaders int) {
	hs := u.req.Header
	for _, i := range st.secretHeaders {
		if i < len(hs) {
			u.noteHeader(hs[i].Name, hs[i].Value)
		}
	}
	for i := len(st.Headers); i < len(st.Headers)+scriptHeaders && i < len(hs); i++ {
		if u.prog.Plan.IsSecretHeader(string(hs[i].Name)) {
			u.noteHeader(hs[i].Name, hs[i].Value)
		}
	}
}

// noteHeader notes one credential header's value once per user.
func (u *User) noteHeader(name, value []byte) {
	if _, ok := u.noted[string(value)]; ok {
		return
	}
	v := string(value)
	u.prog.Plan.NoteSecretHeader(string(name), v)
	u.remember(v)
}

// capturedValue is a capture's value and whether the answer had one.
type capturedValue struct {
	v     string
	found bool
}

// noteSecretCaptures takes and notes the step's secret captures before any
// check or other capture can fail the step: a failed step's answer goes to
// the failure samples and messages, and a token in it must be hidden there
// too. The values wait in u.secretVals for judge, which stores them only if
// the step succeeds, as for every capture.
func (u *User) noteSecretCaptures(st *Step) {
	if cap(u.secretVals) < len(st.Captures) {
		u.secretVals = make([]capturedValue, len(st.Captures))
	}
	u.secretVals = u.secretVals[:len(st.Captures)]
	for i := range st.Captures {
		c := &st.Captures[i]
		if !c.Secret {
			continue
		}
		v, found := u.captureValue(c)
		u.secretVals[i] = capturedValue{v, found}
		if found {
			u.noteCaptured(v)
		}
	}
}

// noteCaptured notes a secret capture's value when it is captured.
func (u *User) noteCaptured(v string) {
	if _, ok := u.noted[v]; ok {
		return
	}
	u.prog.Plan.NoteSecret(v)
	u.remember(v)
}

func (u *User) remember(v string) {
	if u.noted == nil || len(u.noted) >= maxNoted {
		u.noted = make(map[string]struct{}, 4)
	}
	u.noted[v] = struct{}{}
}
