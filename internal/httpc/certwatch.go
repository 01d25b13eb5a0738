package httpc

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/sample"
)

// A server that wants a client certificate we do not have refuses with a
// TLS alert. In TLS 1.3 the alert comes after our side of the handshake is
// done, and HTTP/2's first writes race it: they fail with a broken pipe,
// the connection "could not be established" or is "force closed", and the
// alert is never read; every request that shared or waited for that
// connection fails the same way, and net/http may hand a request a
// connection another request dialed. Those failures are the TLS refusal
// and are counted as `tls`. What is known for sure is per address: its
// server asked for a certificate we did not give. A server that asks only
// if we have one (and then serves) answers; so an address counts as
// refusing while it has asked and has never answered. In TLS 1.2 a server
// judges our certificate before it sends its Finished, so a handshake that
// completes after we sent none counts as an answer: a server that asks
// only optionally and then resets before its first response (down,
// overloaded) is not taken for one refusing us. TLS 1.3 gives no such
// sign: our side is done before the server judges, and its refusal (an
// alert, often unread) and a plain reset look alike to us.

// certWatcher is one Shared's record of certificate requests by address.
type certWatcher struct {
	addrs sync.Map // address -> *addrCerts
}

type addrCerts struct {
	asked, answered atomic.Bool
}

type certAddrKey struct{}

// certReq is what one request's handshakes learn.
type certReq struct {
	addr string
	// asked: a server asked for a certificate and we gave none.
	asked atomic.Bool
}

// contextFrom returns a context under parent (a dial's, which Interrupt
// cancels) telling a handshake which address it is for, and the record
// that handshake fills in.
func (cw *certWatcher) contextFrom(parent context.Context, addr string) (context.Context, *certReq) {
	r := &certReq{addr: addr}
	return context.WithValue(parent, certAddrKey{}, r), r
}

// handshakeDone records a handshake for r that completed; see above for
// why only TLS 1.2 and earlier count as an answer.
func (cw *certWatcher) handshakeDone(r *certReq, version uint16) {
	if version < tls.VersionTLS13 && r.asked.Load() {
		cw.answered(r.addr)
	}
}

// answered records an answer from addr: a server that asked for a
// certificate and serves without one is not refusing.
func (cw *certWatcher) answered(addr string) {
	if v, ok := cw.addrs.Load(addr); ok {
		v.(*addrCerts).answered.Store(true)
	}
}

// blame makes a failure without an answer a TLS failure when addr refuses
// connections for want of a client certificate.
func (cw *certWatcher) blame(addr string, err error) error {
	switch Classify(err) {
	case sample.ConnReset, sample.Other:
	default:
		return err
	}
	v, ok := cw.addrs.Load(addr)
	if !ok || !v.(*addrCerts).asked.Load() || v.(*addrCerts).answered.Load() {
		return err
	}
	return fmt.Errorf("%w: the server asked for a client certificate, we have none (tls.cert_file), and it dropped the connection: %w", errTLSHandshake, err)
}

// config returns a clone of c (each user's handshakes set NextProtos and a
// session cache on their own clones, and the run's config is shared with
// WebSocket dialers) whose
// handshakes record when a server asks for a client certificate that we
// answer with none.
func (cw *certWatcher) config(c *tls.Config) *tls.Config {
	if c == nil {
		c = &tls.Config{}
	} else {
		c = c.Clone()
	}
	own, certs := c.GetClientCertificate, c.Certificates
	c.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		var cert *tls.Certificate
		if own != nil {
			var err error
			if cert, err = own(cri); err != nil {
				return nil, err
			}
		} else {
			// crypto/tls's own choice when GetClientCertificate is unset.
			for i := range certs {
				if cri.SupportsCertificate(&certs[i]) == nil {
					cert = &certs[i]
					break
				}
			}
		}
		if cert != nil && len(cert.Certificate) > 0 {
			return cert, nil
		}
		if r, ok := cri.Context().Value(certAddrKey{}).(*certReq); ok {
			v, _ := cw.addrs.LoadOrStore(r.addr, &addrCerts{})
			v.(*addrCerts).asked.Store(true)
			r.asked.Store(true)
		}
		return &tls.Certificate{}, nil
	}
	return c
}
