package run

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// An https target with a certificate this process does not trust stops
// the run before any request, with ErrTLS and the fix; trusting the CA
// or skipping verification lets it run.
func TestPreflightTLS(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 300ms, users: 1}]}
`)
	_, err := Run(context.Background(), p, Options{TLS: &tls.Config{}})
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "tls.ca_file") || !strings.Contains(err.Error(), "tls.insecure") {
		t.Fatalf("untrusted certificate: %v", err)
	}
	if n.Load() != 0 {
		t.Fatalf("%d requests sent before the TLS check failed", n.Load())
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	for _, conf := range []*tls.Config{{RootCAs: pool}, {InsecureSkipVerify: true}} {
		res, err := Run(context.Background(), p, Options{TLS: conf})
		if err != nil || res.Totals.Requests == 0 || res.Totals.Failed != 0 {
			t.Fatalf("with %+v: %v", conf, err)
		}
	}

	// A wss connection URL on another host than the (plain) target.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	p = mustPlan(t, `
target: `+plain.URL+`
scenarios:
  c: {users: 1, websocket: {url: "wss`+strings.TrimPrefix(srv.URL, "https")+`/x", steps: [{hold: run}]}}
load: {stages: [{duration: 300ms, users: 1}]}
`)
	if _, err := Run(context.Background(), p, Options{}); !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "wss://") {
		t.Fatalf("untrusted wss URL: %v", err)
	}
}
