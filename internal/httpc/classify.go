package httpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/stampede-load/stampede/internal/sample"
)

// Classify maps a transport error to its failure class. The order matters:
// a dial timeout is a timeout, not a refusal, and a TLS alert that arrives
// as a reset is still reported as TLS when the handshake said so.
func Classify(err error) sample.Class {
	if err == nil {
		return sample.OK
	}
	// A lookup that timed out is still the name's failure, not the
	// server's slowness: the request never reached a server.
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return sample.DNS
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return sample.Timeout
	}
	if isTLS(err) {
		return sample.TLS
	}
	if errors.Is(err, ErrProxy) {
		return sample.Proxy
	}
	if errors.Is(err, ErrRefused) {
		return sample.Refused
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return sample.ConnRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrServerClosed),
		errors.Is(err, errH2Reset):
		return sample.ConnReset
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return sample.PortExhausted
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return sample.FDLimit
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return sample.Timeout
	}
	return sample.Other
}

func isTLS(err error) bool {
	var (
		rh    tls.RecordHeaderError
		alert tls.AlertError
		cv    *tls.CertificateVerificationError
		ua    x509.UnknownAuthorityError
		hn    x509.HostnameError
		ci    x509.CertificateInvalidError
		ech   *tls.ECHRejectionError
	)
	return errors.As(err, &rh) || errors.As(err, &alert) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &ech) ||
		errors.Is(err, errTLSHandshake) || tlsAlertOp(err)
}

// tlsAlertOp finds the error crypto/tls gives for an alert: a *net.OpError
// whose Op is "remote error" (the server's alert, such as
// certificate_required when it wants a client certificate) or "local
// error" (ours). tls.AlertError is only used with QUIC, so it alone misses
// both. Every OpError in the chain is looked at, since a transport may wrap
// the alert in a read or write error of its own.
func tlsAlertOp(err error) bool {
	for err != nil {
		var op *net.OpError
		if !errors.As(err, &op) {
			return false
		}
		if op.Op == "remote error" || op.Op == "local error" {
			return true
		}
		err = op.Err
	}
	return false
}
