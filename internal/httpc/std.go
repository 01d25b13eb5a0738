package httpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
)

// Std sends requests through net/http: used for HTTPS, where HTTP/2 is
// negotiated by ALPN and multiplexed over a shared pool. Go's transport may
// replay an idempotent request once on a reused connection that the server
// closed; that is a documented difference from the plain-HTTP path.
type Std struct {
	tr          *http.Transport
	cw          *certWatcher
	maxKept     int
	cancel      atomic.Pointer[context.CancelFunc]
	interrupted atomic.Bool
}

// Interrupt cancels the request in flight and every later one.
func (s *Std) Interrupt() {
	s.interrupted.Store(true)
	if c := s.cancel.Load(); c != nil {
		(*c)()
	}
}

// RoundTrip implements Transport.
func (s *Std) RoundTrip(req *Request, resp *Response) error {
	cctx, creq := s.cw.context(req.Endpoint.Addr)
	trace := &httptrace.ClientTrace{TLSHandshakeDone: func(cs tls.ConnectionState, err error) {
		if err == nil {
			s.cw.handshakeDone(creq, cs.Version)
		}
	}}
	ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(cctx, trace), req.Timeout)
	defer cancel()
	s.cancel.Store(&cancel)
	defer s.cancel.Store(nil)
	if s.interrupted.Load() {
		return ErrInterrupted
	}
	u := &url.URL{Scheme: req.Endpoint.Scheme, Host: req.Endpoint.Addr}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String()+string(req.PathQuery), nil)
	if err != nil {
		return err
	}
	hr.Host = req.Endpoint.Host
	for _, f := range req.Header {
		hr.Header.Add(string(f.Name), string(f.Value))
	}
	if len(req.Body) > 0 || bodyMethod(req.Method) {
		hr.Body = io.NopCloser(bytes.NewReader(req.Body))
		hr.ContentLength = int64(len(req.Body))
		b := req.Body
		hr.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	hres, err := s.tr.RoundTrip(hr)
	if err != nil {
		return s.cw.blame(req.Endpoint.Addr, err)
	}
	defer hres.Body.Close()
	s.cw.answered(req.Endpoint.Addr)
	resp.Status = hres.StatusCode
	resp.takeHeaderBufs()
	for name, values := range hres.Header {
		for _, v := range values {
			start := len(resp.hbuf)
			resp.hbuf = append(resp.hbuf, name...)
			mid := len(resp.hbuf)
			resp.hbuf = append(resp.hbuf, v...)
			resp.Header = append(resp.Header, Field{Name: resp.hbuf[start:mid:mid], Value: resp.hbuf[mid:len(resp.hbuf):len(resp.hbuf)]})
		}
	}
	resp.Body = resp.Body[:0]
	resp.BodyLen = 0
	var buf [16 << 10]byte
	limit := req.KeepHead
	if req.KeepBody {
		limit = max(limit, s.keptCap())
	}
	for {
		n, rerr := hres.Body.Read(buf[:])
		if n > 0 {
			if len(resp.Body) < limit {
				room := min(limit-len(resp.Body), n)
				resp.Body = append(resp.Body, buf[:room]...)
			}
			resp.BodyLen += int64(n)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

func (s *Std) keptCap() int {
	if s.maxKept <= 0 {
		return DefaultMaxKeptBody
	}
	return s.maxKept
}
