package ws

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// h2EchoServer is a TLS server that speaks HTTP/2 to whoever offers it, as
// every modern ASP.NET Core host and Azure SignalR Service do, and echoes
// WebSocket messages on /ws (HTTP/1.1 upgrades only, as WebSockets over
// HTTP/2 is a protocol of its own). The config returned trusts it.
func h2EchoServer(t *testing.T) (*httptest.Server, *tls.Config) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, b); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, &tls.Config{RootCAs: roots}
}

// One tls.Config shared by net/http and the WebSocket dialer, as a run
// shares the plan's: once net/http has used it, it offers h2, and before
// the dialer took its own http/1.1-only clone the upgrade went out over
// an h2 connection and failed as a reset.
func TestWSSAgainstHTTP2Server(t *testing.T) {
	noLeak(t)
	srv, conf := h2EchoServer(t)
	tr := &http.Transport{TLSClientConfig: conf, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	proto, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(proto) != "HTTP/2.0" || !slices.Contains(conf.NextProtos, "h2") {
		t.Fatalf("the server spoke %q and the shared config offers %v: the test needs an h2 server and a config net/http has used", proto, conf.NextProtos)
	}
	o := &Options{TLS: conf}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		c, err := Dial(ctx, "wss"+srv.URL[len("https"):]+"/ws", nil, o, nil)
		if err != nil {
			t.Fatalf("dial %d over wss to an HTTP/2 server: %v", i, err)
		}
		w := c.Expect(Matcher{})
		if err := c.Send(Text, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		msg, err := w.Wait(ctx)
		if err != nil || string(msg) != "hello" {
			t.Fatalf("echo: %q %v", msg, err)
		}
		c.Close(1000, "")
		if d := c.Disconnect(); d.Reason != ClientClose {
			t.Errorf("close: %v", d)
		}
	}
	if !slices.Contains(conf.NextProtos, "h2") || len(o.TLS.NextProtos) != len(conf.NextProtos) {
		t.Errorf("the dialer changed the caller's config: %v", conf.NextProtos)
	}
}
