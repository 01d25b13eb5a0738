package run

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// ErrTLS means a TLS handshake with the target (or a wss/https connection
// URL) failed before any load was sent. Without this check an untrusted
// certificate turned the whole test into `tls` failures, read as an
// overloaded system.
var ErrTLS = errors.New("TLS check failed")

const tlsCheckTimeout = 10 * time.Second

// TLSAdvice is what a failed TLS check tells the user to change, in the
// words of what they gave: a plan's tls keys, or `stampede url`'s flags.
type TLSAdvice struct {
	// Trust says how to trust the CA that signed the server's
	// certificate, and Skip how to skip the check (a test server only).
	Trust, Skip string
	// Name says how to ask for a name the certificate holds.
	Name string
	// Settings names every TLS setting there is to check.
	Settings string
}

// PlanTLSAdvice names a plan's tls keys, the advice where Options give
// none.
var PlanTLSAdvice = TLSAdvice{
	Trust:    "give the CA that signed it as tls.ca_file (a PEM file) in the plan",
	Skip:     "set tls.insecure: true",
	Name:     "use a host name it holds in the URL, or set tls.server_name to one",
	Settings: "the plan's tls settings (ca_file, cert_file, key_file, server_name)",
}

// checkTLS completes one handshake over nc with a clone of conf, as the
// users' transports will. rawURL (shown in the error, so free of secrets)
// and hostport are the address being checked.
func checkTLS(nc net.Conn, rawURL, hostport string, conf *tls.Config, advice TLSAdvice) error {
	cfg := &tls.Config{}
	if conf != nil {
		cfg = conf.Clone()
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			host = hostport
		}
		cfg.ServerName = host
	}
	ctx, cancel := context.WithTimeout(context.Background(), tlsCheckTimeout)
	defer cancel()
	tc := tls.Client(nc, cfg)
	err := tc.HandshakeContext(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the server did not complete a TLS handshake within %v", tlsCheckTimeout)
	}
	return fmt.Errorf("%w: %s: %v\nNothing was sent. %s", ErrTLS, rawURL, err, tlsFix(err, advice))
}

// tlsFix is what to change for the handshake's failure: only an unknown
// CA is fixed by trusting one (an expired certificate or another host's
// is not, however trusted its CA).
func tlsFix(err error, advice TLSAdvice) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknown):
		return "The server's certificate is not trusted here: " + advice.Trust + ", or, for a test server only, " + advice.Skip + "."
	case errors.As(err, &hostname):
		return "The server's certificate is not for the name asked: " + advice.Name + " (for a test server only, " + advice.Skip + ")."
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "The server's certificate has expired or is not yet valid: renew it, or check this machine's clock (for a test server only, " + advice.Skip + ")."
	case errors.As(err, new(*tls.CertificateVerificationError)):
		return "The server's certificate did not verify: see the reason above (for a test server only, " + advice.Skip + ")."
	}
	return "Check that the address speaks TLS, and " + advice.Settings + "."
}

// preflightConnTLS checks TLS to the wss/https URLs of connection
// scenarios that are not on the target (a path is joined to the target,
// which preflight has checked). A URL is rendered for the population's
// first slot, so one whose host varies per tenant is checked for one
// tenant. A host that cannot be reached is left to the run, which counts
// its failed attempts: only a failed handshake stops the run here.
func preflightConnTLS(p *plan.Plan, conf *tls.Config, advice TLSAdvice) error {
	seen := map[string]bool{}
	for _, sc := range p.Scenarios {
		spec := sc.Connection.Spec()
		if spec == nil {
			continue
		}
		var t *plan.Template
		switch {
		case spec.SignalR != nil:
			t = spec.SignalR.URL
		case spec.WebSocket != nil:
			t = spec.WebSocket.URL
		}
		if t == nil {
			continue
		}
		env := &plan.Env{Tenant: tenantOfSlot(sc.Connection, 0, p.Tenants), VU: 1}
		raw := t.String(env)
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		if s := strings.ToLower(u.Scheme); s != "wss" && s != "https" {
			continue
		}
		hostport := u.Host
		if u.Port() == "" {
			hostport = net.JoinHostPort(u.Hostname(), "443")
		}
		if seen[hostport] {
			continue
		}
		seen[hostport] = true
		nc, err := net.DialTimeout("tcp", hostport, 5*time.Second)
		if err != nil {
			continue
		}
		// Only scheme and host are shown: a connection URL's query often
		// carries an access token.
		err = checkTLS(nc, u.Scheme+"://"+u.Host, hostport, conf, advice)
		nc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
