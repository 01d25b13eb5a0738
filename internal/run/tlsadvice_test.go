package run

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// expiredServer serves TLS with a certificate for 127.0.0.1 that expired
// a year ago, and returns it to trust.
func expiredServer(t *testing.T) (*httptest.Server, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "expired"},
		NotBefore: time.Now().Add(-2 * 365 * 24 * time.Hour), NotAfter: time.Now().Add(-365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, cert
}

// The TLS check's advice fits the failure: only an unknown CA is fixed by
// trusting one. Before, an expired certificate, or one for another name,
// from a CA already trusted, was told to give tls.ca_file, which fixes
// neither.
func TestTLSCheckAdviceFitsTheFailure(t *testing.T) {
	expired, cert := expiredServer(t)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	named := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer named.Close()
	namedPool := x509.NewCertPool()
	namedPool.AddCert(named.Certificate())
	for _, c := range []struct {
		name, target string
		conf         *tls.Config
		want         string
	}{
		{"expired", expired.URL, &tls.Config{RootCAs: pool}, "has expired or is not yet valid"},
		{"another name", named.URL, &tls.Config{RootCAs: namedPool, ServerName: "other.example"}, "not for the name asked"},
		{"unknown CA", named.URL, &tls.Config{}, "tls.ca_file"},
	} {
		p := mustPlan(t, `
target: `+c.target+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 300ms, users: 1}]}
`)
		_, err := Run(context.Background(), p, Options{TLS: c.conf})
		if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want advice saying %q", c.name, err, c.want)
		}
		if c.name != "unknown CA" && strings.Contains(err.Error(), "tls.ca_file") {
			t.Errorf("%s: %v: advises a CA file that would fix nothing", c.name, err)
		}
	}
}
