package httpc

import (
	"fmt"
	"os"
	"time"
)

// Shared mode under version auto over https: which protocol an origin
// speaks is found out once per run, by the first request's ALPN, and the
// connection it opened becomes the origin's first shared one.

// adopt makes a connection whose server chose h2 by ALPN (the probe of
// key's origin) a shared one, and tells the users waiting on the probe.
func (p *h2pool) adopt(key string, hc *h2conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		hc.closeWith(nil)
		hc.release()
		return
	}
	e := p.entry(key)
	e.alpn, e.probing = alpnChoseH2, false
	p.addMux(e, key, hc, 0)
	e.signal()
}

// errNoProtocol is a request that waited its whole timeout for another
// user's first connection to its origin to choose HTTP/1.1 or HTTP/2.
var errNoProtocol = fmt.Errorf("no protocol chosen by the origin's first connection before the timeout: %w", os.ErrDeadlineExceeded)

// negotiated says, in shared mode under version auto over https, whether
// req's origin speaks h2 (its requests go to the shared connections), or
// that the caller is to find out (probe: it sends req through HTTP/1.1
// offering h2 and calls probed unless the server chose h2). Meanwhile the
// other users wait, so the run dials the origin once, not once per user.
func (c *H2) negotiated(req *Request) (h2, probe bool, err error) {
	if c.pool == nil || req.Endpoint.Scheme != "https" {
		return false, false, nil
	}
	deadline := req.Sent
	if deadline.IsZero() {
		deadline = time.Now()
	}
	deadline = deadline.Add(req.Timeout)
	p, key := c.pool, c.origin(req.Endpoint)
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false, false, ErrInterrupted
		}
		e := p.entry(key)
		switch {
		case e.alpn != alpnUnknown:
			p.mu.Unlock()
			return e.alpn == alpnChoseH2, false, nil
		case !e.probing:
			e.probing = true
			p.mu.Unlock()
			return false, true, nil
		}
		wait := e.changed
		e.waiters++
		p.mu.Unlock()
		if err := waitUntil(wait, deadline, c.stop, errNoProtocol); err != nil {
			return false, false, err
		}
	}
}

// probed ends a probe that did not choose h2: chose is alpnChoseH1 when
// the origin answered over HTTP/1.1, alpnUnknown when the request failed
// before it could tell (the next user's request probes again).
func (c *H2) probed(ep *Endpoint, chose int) {
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entry(c.origin(ep))
	if e.alpn == alpnUnknown {
		e.alpn = chose
	}
	e.probing = false
	e.signal()
}

// origin is h2Origin(ep), remembered for the last endpoint: a user sends
// to the same one over and over, and the key costs no allocation then.
func (c *H2) origin(ep *Endpoint) string {
	if ep != c.lastEP {
		c.lastEP, c.lastKey = ep, h2Origin(ep)
	}
	return c.lastKey
}
