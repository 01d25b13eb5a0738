package vu

import (
	"net/http"
	"strconv"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/sample"
)

// keepHead is how much of every body the transport keeps besides what
// checks read: enough for a failure's message, or for a failure sample's
// first KiB when samples are taken. Copying a few hundred bytes of each
// answer costs no allocation once the buffer has grown.
func (u *User) keepHead() int {
	if u.shard.Failures() != nil {
		return metrics.SampleResponseBody
	}
	return metrics.BodySnippet
}

// failed counts a failed request with what it said: check is the check's
// explanation (judge), err the transport's error; with neither, the
// answer's status, reason and the start of its body are the message, as
// "409 Conflict: {"error":"voter has already voted"}". A message this
// shard has seen before costs no allocation.
func (u *User) failed(st *Step, class sample.Class, check []byte, err error, sent time.Time, latency time.Duration) {
	status := 0
	if err == nil {
		status = u.resp.Status
	}
	switch {
	case err != nil:
		text := metrics.ErrorText(err)
		if class == sample.Timeout && st.Timeout > 0 {
			text = "timeout after " + st.Timeout.String() + ": " + text
		}
		u.shard.FailText(st.ID, class, 0, latency, text)
	case len(check) > 0:
		u.shard.Fail(st.ID, class, status, latency, check)
	default:
		u.msg = appendStatus(u.msg[:0], status)
		if len(u.resp.Body) > 0 {
			u.msg = append(u.msg, ": "...)
			u.msg = metrics.AppendBody(u.msg, u.resp.Body, u.resp.Get("Content-Type"))
		}
		u.shard.Fail(st.ID, class, status, latency, u.msg)
	}
	if log := u.shard.Failures(); log != nil && log.Want(st.ID) {
		u.sampleFailure(log, st, class, check, err, sent, latency)
	}
}

// appendStatus appends "409 Conflict" (the code alone when it has no
// standard reason).
func appendStatus(dst []byte, code int) []byte {
	dst = strconv.AppendInt(dst, int64(code), 10)
	if reason := http.StatusText(code); reason != "" {
		dst = append(dst, ' ')
		dst = append(dst, reason...)
	}
	return dst
}

// sampleFailure writes the whole exchange to the failure log; it runs at
// most a few times per step, so it may allocate freely.
func (u *User) sampleFailure(log *metrics.FailureLog, st *Step, class sample.Class, check []byte, err error, sent time.Time, latency time.Duration) {
	r := &u.req
	info := u.prog.Steps[st.ID]
	x := &metrics.Exchange{
		Time: time.Now().UTC(), Scenario: info.Scenario, Step: info.Name, Class: class.String(),
		Request: metrics.ExchangeReq{
			Method: r.Method, Headers: fields(r.Header), BodyBytes: len(r.Body),
		},
		Timings: metrics.ExchangeTiming{
			SentAt:    sent.UTC(),
			LatencyMS: float64(latency.Microseconds()) / 1000,
			ElapsedMS: float64(time.Since(sent).Microseconds()) / 1000,
		},
	}
	if r.Endpoint != nil {
		x.Request.URL = r.Endpoint.Scheme + "://" + r.Endpoint.Host + string(r.PathQuery)
	}
	x.Request.Body = cutBody(r.Body, int64(len(r.Body)), metrics.MaxSampleRequestBody)
	switch {
	case err != nil:
		x.Error = err.Error()
		x.Message = metrics.ErrorText(err)
	default:
		// A check's explanation and a status message are both in u.msg.
		x.Message = string(u.msg)
		x.Response = &metrics.ExchangeResp{
			Status: u.resp.Status, Headers: fields(u.resp.Header), BodyBytes: u.resp.BodyLen,
			Body: cutBody(u.resp.Body, u.resp.BodyLen, metrics.SampleResponseBody),
		}
	}
	log.Add(st.ID, x)
}

// cutBody is the first limit bytes of body (of full bytes in all, the
// transport may have kept fewer), ending in "…" when that is not all of it:
// redaction then hides the start of a secret the cut went through
// (plan.Redact), which it cannot tell from any other text without the mark.
func cutBody(body []byte, full int64, limit int) string {
	shown := body[:min(len(body), limit)]
	if int64(len(shown)) < full {
		return string(shown) + "…"
	}
	return string(shown)
}

func fields(h []httpc.Field) [][2]string {
	out := make([][2]string, len(h))
	for i, f := range h {
		out[i] = [2]string{string(f.Name), string(f.Value)}
	}
	return out
}
