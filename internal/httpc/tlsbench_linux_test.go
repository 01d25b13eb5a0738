package httpc

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHTTPSKeepAlive is the hot path of an HTTPS user: one request
// and answer on a kept-alive TLS connection, the look after the answer
// included. The client side allocates nothing per request; the allocations
// reported are the in-process server's (its line reads and crypto/tls's
// own read path).
func BenchmarkHTTPSKeepAlive(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	certs := srv.TLS.Certificates
	srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := tls.Server(c, &tls.Config{Certificates: certs})
				br := bufio.NewReader(tc)
				for readRequest(br) == nil {
					if _, err := io.WriteString(tc, answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	sh := NewShared(insecure())
	defer sh.Close()
	tr := sh.NewTransport()
	defer tr.Close()
	req := get(httpsEP(ln.Addr().String()), "/")
	req.KeepBody = false
	req.Header = []Field{{Name: []byte("Accept"), Value: []byte("*/*")}}
	var resp Response
	tr.RoundTrip(req, &resp)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tr.RoundTrip(req, &resp); err != nil {
			b.Fatal(err)
		}
	}
}
