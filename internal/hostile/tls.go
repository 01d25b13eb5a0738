package hostile

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
)

// ClientCertRequired is an HTTPS server with HTTP/2 enabled that demands a
// client certificate and refuses a connection without one with a TLS
// alert. It returns the server's URL. In TLS 1.3, the default, the alert
// comes after the client has finished its side of the handshake, so a
// check that only shakes hands passes and every request fails.
func ClientCertRequired(t testing.TB, maxVersion uint16) string {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert, MaxVersion: maxVersion}
	// Each refused handshake would log a line.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}
