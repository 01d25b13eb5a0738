package httpc

import (
	"net/http"
	"time"
)

// h2c is HTTP/2 over plain TCP with prior knowledge (RFC 9113 section
// 3.3): no TLS, no Upgrade round trip. net/http speaks it when a
// transport's only protocol is UnencryptedHTTP2. Like HTTPS, every user
// shares the transport, so streams of many users multiplex over a few
// connections as a browser's or a gRPC client's would; and like HTTPS,
// its failures are net/http's errors, classified the same way.

// newH2C returns the shared h2c transport, or nil when o does not ask
// for it.
func newH2C(o Options) *http.Transport {
	if !o.H2C {
		return nil
	}
	var pr http.Protocols
	pr.SetUnencryptedHTTP2(true)
	maxHeader, _ := o.limits()
	return &http.Transport{
		Protocols:              &pr,
		MaxIdleConnsPerHost:    100000,
		MaxConnsPerHost:        o.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: int64(maxHeader),
	}
}

// h2cFor is a user's sender over the shared h2c transport, or nil.
func (s *Shared) h2cFor(maxKept int) *Std {
	if s.h2c == nil {
		return nil
	}
	return &Std{tr: s.h2c, cw: s.cw, maxKept: maxKept}
}
