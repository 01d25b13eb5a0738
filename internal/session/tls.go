package session

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/stampede-load/stampede/internal/plan"
)

// tlsConfig is the TLS the plan's tls: block asks for; a file that cannot
// be read is a usage error.
func tlsConfig(p *plan.Plan) (*tls.Config, error) {
	c := &tls.Config{InsecureSkipVerify: p.TLS.Insecure, ServerName: p.TLS.ServerName}
	if p.TLS.CAFile != "" {
		pem, err := os.ReadFile(p.TLS.CAFile)
		if err != nil {
			return nil, Fail(ExitUsage, fmt.Errorf("tls ca_file: %v", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, Fail(ExitUsage, fmt.Errorf("tls ca_file %s: no PEM certificate found", p.TLS.CAFile))
		}
		c.RootCAs = pool
	}
	if p.TLS.CertFile != "" || p.TLS.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(p.TLS.CertFile, p.TLS.KeyFile)
		if err != nil {
			return nil, Fail(ExitUsage, fmt.Errorf("tls client certificate: %v", err))
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
