package vu

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/sample"
)

// Redirects are followed as browsers and k6 follow them, up to the step's
// limit (plan.HTTPOptions.RedirectLimit: redirects, http.redirects, 10).
// Every hop is a request the server served: counted, timed from its own
// send and recorded with its status under the step's hop row ("GET /a ↪
// redirect", addHopRows), so the run's totals hold it while the step's
// own row, its error rate and its percentiles are its final answers: one
// request an iteration. The last answer is the one checks, captures and
// expressions see. A 3xx is followed
// only with a Location (a 300 or 304, or a 3xx without one, is the
// answer); one that would go past the limit, or whose Location cannot be
// followed, is a failure of class redirects.

// redirectState is what a user following redirects keeps between hops,
// made at its first redirect: a user that never meets one holds a nil
// pointer.
type redirectState struct {
	hdr    []httpc.Field
	cookie []byte
	// explicit holds the step's own Cookie headers rendered for a hop to
	// the same host.
	explicit []byte
	// loopHops is how many redirects of its current step the event loop
	// has followed for the user; loopDue says the next hop is ready in
	// u.req for the loop to send (evloop.go).
	loopHops int
	loopDue  bool
}

// isRedirect reports whether an answer is a redirect to follow: 301, 302,
// 303, 307 or 308 with a Location.
func isRedirect(r *httpc.Response) bool {
	switch r.Status {
	case 301, 302, 303, 307, 308:
		return r.Get("Location") != nil
	}
	return false
}

// redirected follows the 3xx answer in u.resp to st's request, sent at
// sent with its latency from from (zero: its send, as do's), then judges
// the last answer as do does. It reports whether the iteration goes on.
func (u *User) redirected(st *Step, from, sent time.Time) bool {
	limit := u.prog.Plan.HTTP.RedirectLimit(st.Step)
	if limit == 0 {
		return u.finish(st, nil, sent, u.latency(from, sent))
	}
	for followed := 0; ; followed++ {
		latency := u.latency(from, sent)
		if followed == limit {
			u.failed(st, sample.Redirects, fmt.Appendf(nil, "%d %s after %d redirects (the limit: redirects, http.redirects): a loop, or a longer chain than the limit", u.resp.Status, u.resp.Get("Location"), limit), nil, sent, latency)
			return false
		}
		if u.jar != nil || u.resp.Get("Set-Cookie") != nil {
			u.storeCookies(st)
		}
		if err := u.nextHop(st); err != nil {
			u.failed(st, sample.Redirects, []byte(err.Error()), nil, sent, latency)
			return false
		}
		u.shard.RecordResponse(st.hopID, sample.OK, u.resp.Status, latency)
		// Every later hop counts from its own send.
		sent, from = time.Now(), time.Time{}
		u.req.Sent = sent
		u.inFlight.Add(1)
		err := u.tr.RoundTrip(&u.req, &u.resp)
		u.inFlight.Add(-1)
		if err != nil || !isRedirect(&u.resp) {
			return u.finish(st, err, sent, u.latency(from, sent))
		}
	}
}

// nextHop turns u.req into the request u.resp's Location asks for: its
// URL resolved against the request's, the method and body changed as
// browsers change them (redirectMethod), the cookies the user's jar holds
// for the new URL, and no Authorization for another host.
func (u *User) nextHop(st *Step) error {
	loc := string(u.resp.Get("Location"))
	base := u.requestURL(&u.req)
	ref, err := url.Parse(strings.TrimSpace(loc))
	if base == nil || err != nil {
		return fmt.Errorf("%d to Location %q: it cannot be read as a URL", u.resp.Status, loc)
	}
	next := base.ResolveReference(ref)
	if next.Scheme != "http" && next.Scheme != "https" || next.Host == "" {
		return fmt.Errorf("%d to Location %q: only http and https redirects are followed", u.resp.Status, loc)
	}
	r := &u.req
	sameHost := canonicalHost(next.Scheme, next.Host) == canonicalHost(r.Endpoint.Scheme, r.Endpoint.Host)
	if next.Scheme != r.Endpoint.Scheme || !sameHost {
		ep, _, err := u.dynamicEndpoint(next.Scheme + "://" + next.Host + "/")
		if err != nil {
			return fmt.Errorf("%d to Location %q: %w", u.resp.Status, loc, err)
		}
		r.Endpoint = ep
	}
	u.scratch = append(u.scratch[:0], next.RequestURI()...)
	r.PathQuery = u.scratch
	method, keepBody := redirectMethod(u.resp.Status, r.Method)
	r.Method = method
	if !keepBody {
		r.Body = nil
	}
	u.hopHeaders(st, keepBody, sameHost)
	return nil
}

// canonicalHost is host as the same-host rule compares it: lower case
// (host names are case-insensitive) and without the scheme's default
// port, so HOST:80 after host is no change of host.
func canonicalHost(scheme, host string) string {
	host = strings.ToLower(host)
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	}
	return host
}

// redirectMethod is the method and body a redirect's next request has,
// as browsers (and the Fetch standard) send it: 303 turns anything but
// HEAD into a GET without a body, 301 and 302 turn a POST into one, and
// 307 and 308 keep both.
func redirectMethod(status int, method string) (string, bool) {
	switch {
	case status == 303 && method != "HEAD" && method != "GET":
		return "GET", false
	case (status == 301 || status == 302) && method == "POST":
		return "GET", false
	}
	return method, true
}

// hopHeaders keeps the request's headers for the next hop but its Cookie
// headers, its body's headers when the body is dropped, and
// Authorization when the host changes. The Cookie headers are made anew:
// the step's own (explicit) ones on the same host only, as Go's client
// and k6 keep them, then the jar's for the new URL.
func (u *User) hopHeaders(st *Step, keepBody, sameHost bool) {
	if u.redir == nil {
		u.redir = &redirectState{}
	}
	rs := u.redir
	rs.explicit = rs.explicit[:0]
	var spans []int
	if sameHost {
		for _, h := range st.Headers {
			if strings.EqualFold(h.Name, "Cookie") {
				rs.explicit = h.Value.Append(rs.explicit, &u.env)
				spans = append(spans, len(rs.explicit))
			}
		}
	}
	hdr := rs.hdr[:0]
	for _, f := range u.req.Header {
		name := string(f.Name)
		switch {
		case strings.EqualFold(name, "Cookie"),
			!keepBody && (strings.EqualFold(name, "Content-Type") || strings.EqualFold(name, "Content-Encoding")),
			!sameHost && strings.EqualFold(name, "Authorization"):
			continue
		}
		hdr = append(hdr, f)
	}
	from := 0
	for _, end := range spans {
		hdr = append(hdr, httpc.Field{Name: cookieName, Value: rs.explicit[from:end:end]})
		from = end
	}
	if u.jar != nil {
		if c := u.cookieHeader(&u.req); c != "" {
			rs.cookie = append(rs.cookie[:0], c...)
			hdr = append(hdr, httpc.Field{Name: cookieName, Value: rs.cookie})
		}
	}
	rs.hdr = hdr
	u.req.Header = hdr
}

var cookieName = []byte("Cookie")

// loopRedirect is redirected for the event loop, one hop at a time: the
// 3xx in u.resp, an answer to st sent at sent, is recorded as its hop and
// the next request made ready (LoopRedirectDue), or it fails as
// redirects. The loop dials its one address, so it follows a redirect
// only to the step's own origin and says so of any other.
func (u *User) loopRedirect(st *Step, sent time.Time, latency time.Duration) {
	if u.redir == nil {
		u.redir = &redirectState{}
	}
	rs := u.redir
	limit := u.prog.Plan.HTTP.RedirectLimit(st.Step)
	if rs.loopHops == limit {
		rs.loopHops = 0
		u.failed(st, sample.Redirects, fmt.Appendf(nil, "%d %s after %d redirects (the limit: redirects, http.redirects): a loop, or a longer chain than the limit", u.resp.Status, u.resp.Get("Location"), limit), nil, sent, latency)
		return
	}
	if u.jar != nil || u.resp.Get("Set-Cookie") != nil {
		u.storeCookies(st)
	}
	status, loc := u.resp.Status, string(u.resp.Get("Location"))
	if err := u.nextHop(st); err != nil {
		rs.loopHops = 0
		u.failed(st, sample.Redirects, []byte(err.Error()), nil, sent, latency)
		return
	}
	if u.req.Endpoint != st.endpoint {
		rs.loopHops = 0
		u.failed(st, sample.Redirects, fmt.Appendf(nil, "%d to %s: %s; run with --engine goroutines to follow this one, or set redirects: 0 to measure the 3xx itself", status, loc, sample.LoopCrossOrigin), nil, sent, latency)
		return
	}
	u.shard.RecordResponse(st.hopID, sample.OK, status, latency)
	rs.loopHops++
	rs.loopDue = true
}
