package vu

import (
	"github.com/stampede-load/stampede/internal/jsonpath"
	"net/http"
	"strconv"

	"github.com/stampede-load/stampede/internal/plan"
)

// Captures are written once, here, for every scenario kind: an HTTP step
// takes them from its answer (judge), a WebSocket step from the message it
// waited for (CaptureMessage). Both read JSON through the same decoder, so
// numbers keep the text the server wrote, and fail with the same words.
// A connection's handshake headers are rendered here too, with the
// credentials noted as a request step's are.

// headerSource gives an answer's header by name: the HTTP response; a
// message has none (the plan refuses header captures on one).
type headerSource interface {
	Get(name string) []byte
}

// answer is one answer as captures and checks read it: its body read as
// JSON once (jsonpath.Doc: validated, then walked per path without a
// decoded tree, which cost a flow nearly all its allocations), however
// many of them read it.
type answer struct {
	doc    jsonpath.Doc
	parsed bool
}

// reset forgets the previous answer's document.
func (a *answer) reset() { a.doc.Reset(nil); a.parsed = false }

// json is body as one JSON document, or false when it is not one.
func (a *answer) json(body []byte) (*jsonpath.Doc, bool) {
	if !a.parsed {
		a.parsed = true
		a.doc.Reset(body)
	}
	return &a.doc, a.doc.Valid()
}

// value is what c takes from the answer (body, and headers when h is not
// nil), and whether it found it.
func (a *answer) value(c *plan.Capture, body []byte, h headerSource) (string, bool) {
	switch c.Kind {
	case plan.CaptureHeader:
		if h == nil {
			return "", false
		}
		if v := h.Get(c.Header); v != nil {
			return string(v), true
		}
	case plan.CaptureRegex:
		if m := c.Regex.FindSubmatch(body); m != nil {
			if len(m) > 1 {
				return string(m[1]), true
			}
			return string(m[0]), true
		}
	case plan.CaptureJSON:
		if doc, ok := a.json(body); ok {
			return doc.At(c.JSONPath)
		}
	}
	return "", false
}

// appendCaptureFailure appends the one wording of a capture that found
// nothing, whichever protocol the answer came over.
func appendCaptureFailure(dst []byte, name string) []byte {
	return append(strconv.AppendQuote(append(dst, "capture "...), name), " found nothing"...)
}

// CaptureError is a capture that found nothing in a connection's message.
type CaptureError struct{ Name string }

func (e *CaptureError) Error() string { return string(appendCaptureFailure(nil, e.Name)) }

// CaptureMessage takes caps from a connection's message into env, as
// judge takes an HTTP step's captures from its answer, in order until the
// first that finds nothing, which is a *CaptureError. A secret capture is
// noted with p as it is taken, so its value is hidden from every message
// and sample, as a request step's is.
func CaptureMessage(p *plan.Plan, caps []plan.Capture, msg []byte, env *plan.Env) error {
	var a answer
	for i := range caps {
		c := &caps[i]
		v, ok := a.value(c, msg, nil)
		if !ok {
			return &CaptureError{Name: c.Name}
		}
		if c.Secret && p != nil {
			p.NoteSecret(v)
		}
		if c.Slot < len(env.Captures) {
			env.Captures[c.Slot] = v
		}
	}
	return nil
}

// ConnectionHeaders renders a connection's handshake headers for env. A
// credential header (plan.IsSecretHeader) is noted before it is sent, as a
// request step's is (noteSentSecrets), so a hub echoing its handshake
// finds it hidden.
func ConnectionHeaders(p *plan.Plan, hs []plan.Header, env *plan.Env) http.Header {
	if len(hs) == 0 {
		return nil
	}
	h := make(http.Header, len(hs))
	for _, x := range hs {
		v := x.Value.String(env)
		if p.IsSecretHeader(x.Name) {
			p.NoteSecretHeader(x.Name, v)
		}
		h.Add(x.Name, v)
	}
	return h
}
