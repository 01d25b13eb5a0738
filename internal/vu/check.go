package vu

import (
	"bytes"
	"strconv"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sample"
)

// judge classifies an answer: an unexpected 429/4xx/5xx is its status
// class, any other unmet expectation is a check failure, and a capture that
// finds nothing is a capture failure.
//
// A check's explanation is built in the user's reused buffer (u.msg) and
// returned as a slice of it, so a failing check costs no allocation once
// its message has been seen: a server failing every request must not make
// the generator slower by allocating per failure.
func (u *User) judge(st *Step) (sample.Class, []byte) {
	u.ans.reset()
	if st.secretCaptures {
		u.noteSecretCaptures(st) // secrets.go
	}
	code := u.resp.Status
	exp := &st.Expect
	if len(exp.Status) > 0 {
		accepted := false
		for _, m := range exp.Status {
			if m.Matches(code) {
				accepted = true
				break
			}
		}
		if !accepted {
			if c := sample.FromStatus(code); c != sample.OK {
				return c, nil
			}
			m := append(u.msg[:0], "expected status "...)
			m = appendStatusList(m, exp.Status)
			m = append(m, ", got "...)
			u.msg = strconv.AppendInt(m, int64(code), 10)
			return sample.Check, u.msg
		}
	} else if c := sample.FromStatus(code); c != sample.OK {
		return c, nil
	}
	for _, want := range exp.BodyContains {
		if !bytes.Contains(u.resp.Body, []byte(want)) {
			u.msg = strconv.AppendQuote(append(u.msg[:0], "body does not contain "...), want)
			u.msg = append(u.msg, u.resp.CutNote()...)
			return sample.Check, u.msg
		}
	}
	for _, je := range exp.JSON {
		doc, ok := u.ans.json(u.resp.Body)
		if !ok {
			u.msg = append(append(u.msg[:0], "body is not JSON"...), u.resp.CutNote()...)
			return sample.Check, u.msg
		}
		got, ok := doc.At(je.Path)
		if !ok {
			u.msg = append(appendPath(append(u.msg[:0], "json "...), je.Path), ": not found"...)
			return sample.Check, u.msg
		}
		if got != je.Value {
			m := append(appendPath(append(u.msg[:0], "json "...), je.Path), ": expected "...)
			m = append(strconv.AppendQuote(m, je.Value), ", got "...)
			u.msg = strconv.AppendQuote(m, got)
			return sample.Check, u.msg
		}
	}
	for i := range st.Captures {
		c := &st.Captures[i]
		var val string
		var found bool
		if c.Secret {
			// Taken and noted before the checks (noteSecretCaptures).
			val, found = u.secretVals[i].v, u.secretVals[i].found
		} else {
			val, found = u.captureValue(c)
		}
		if !found {
			u.msg = appendCaptureFailure(u.msg[:0], c.Name)
			u.msg = append(u.msg, u.resp.CutNote()...)
			return sample.Capture, u.msg
		}
		u.env.Captures[c.Slot] = val
	}
	return sample.OK, nil
}

// captureValue is what c takes from the answer, and whether it found it.
func (u *User) captureValue(c *plan.Capture) (string, bool) {
	return u.ans.value(c, u.resp.Body, &u.resp)
}

func appendStatusList(dst []byte, ms []plan.StatusMatch) []byte {
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, " or "...)
		}
		if m.Code != 0 {
			dst = strconv.AppendInt(dst, int64(m.Code), 10)
		} else {
			dst = append(strconv.AppendInt(dst, int64(m.Class), 10), "xx"...)
		}
	}
	return dst
}

// appendPath appends a JSON path as it is written in the plan, a.b.0.c.
func appendPath(dst []byte, path []string) []byte {
	for i, p := range path {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, p...)
	}
	return dst
}
