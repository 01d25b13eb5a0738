package httpc

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/testserver"
)

// viaProxy makes a transport whose every endpoint goes through proxyURL.
func viaProxy(t *testing.T, proxyURL string, o Options) *Mux {
	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	o.Proxy = func(string, string) (*url.URL, error) { return u, nil }
	sh := NewShared(o)
	t.Cleanup(sh.Close)
	m := sh.NewTransport()
	t.Cleanup(m.Close)
	return m
}

func proxiedGet(m *Mux, ep *Endpoint, path string) (*Response, error) {
	req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte(path), Timeout: 10 * time.Second, KeepBody: true}
	var resp Response
	err := m.RoundTrip(req, &resp)
	return &resp, err
}

// Plain http goes to the proxy in absolute form, with the proxy URL's
// credentials, on one kept-alive connection to the proxy.
func TestProxyPlainHTTPInAbsoluteForm(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.URL.Path) }))
	t.Cleanup(origin.Close)
	px := testserver.NewForwardProxy(t)
	m := viaProxy(t, "http://ann:pw@"+px.Listener.Addr().String(), Options{})
	host := "origin.test:" + origin.URL[strings.LastIndexByte(origin.URL, ':')+1:]
	ep := &Endpoint{Scheme: "http", Addr: host, Host: host}
	for _, path := range []string{"/a", "/b"} {
		resp, err := proxiedGet(m, ep, path)
		if err != nil || resp.Status != 200 || string(resp.Body) != "hello "+path {
			t.Fatalf("%s: %v %d %q", path, err, resp.Status, resp.Body)
		}
	}
	want := []string{"GET http://" + host + "/a Basic YW5uOnB3", "GET http://" + host + "/b Basic YW5uOnB3"}
	if got := px.Requests(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the proxy saw %q, want %q", got, want)
	}
}

// https goes through a CONNECT tunnel, TLS to the origin inside it, over
// HTTP/1.1 or HTTP/2 as ALPN chooses.
func TestProxyHTTPSThroughConnect(t *testing.T) {
	for _, proto := range []Protocol{ProtoHTTP1, ProtoAuto, ProtoH2} {
		origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }))
		origin.EnableHTTP2 = true
		origin.StartTLS()
		t.Cleanup(origin.Close)
		pool := x509.NewCertPool()
		pool.AddCert(origin.Certificate())
		px := testserver.NewForwardProxy(t)
		m := viaProxy(t, px.URL, Options{TLS: &tls.Config{RootCAs: pool}, Protocol: proto})
		host := "example.com:" + origin.URL[strings.LastIndexByte(origin.URL, ':')+1:]
		ep := &Endpoint{Scheme: "https", Addr: host, Host: host}
		want := map[Protocol]string{ProtoHTTP1: "HTTP/1.1", ProtoAuto: "HTTP/2.0", ProtoH2: "HTTP/2.0"}[proto]
		for i := 0; i < 2; i++ {
			resp, err := proxiedGet(m, ep, "/")
			if err != nil || resp.Status != 200 || string(resp.Body) != want {
				t.Fatalf("protocol %d request %d: %v %d %q, want %s", proto, i, err, resp.Status, resp.Body, want)
			}
		}
		if got := px.Requests(); len(got) != 1 || got[0] != "CONNECT "+host+" " {
			t.Errorf("protocol %d: the proxy saw %q, want one CONNECT %s", proto, got, host)
		}
	}
}

// A proxy that wants credentials (407), to a plain-http request or to
// CONNECT, and a CONNECT refused, fail as class proxy, saying so.
func TestProxyRefusalsAreClassProxy(t *testing.T) {
	px := testserver.NewForwardProxy(t)
	px.RequireAuth("Basic YW5uOnB3")
	for _, c := range []struct {
		proxy, scheme, want string
		refuse              bool
	}{
		{px.URL, "http", "asked for authentication (407)", false},
		{px.URL, "https", "answered CONNECT example.com:443 with 407", false},
		{"http://ann:wrong@" + px.Listener.Addr().String(), "http", "refused the credentials", false},
		{"http://ann:pw@" + px.Listener.Addr().String(), "https", "answered CONNECT example.com:443 with 403", true},
	} {
		px.SetRefuseConnect(c.refuse)
		m := viaProxy(t, c.proxy, Options{})
		ep := &Endpoint{Scheme: c.scheme, Addr: "example.com:443", Host: "example.com:443"}
		_, err := proxiedGet(m, ep, "/")
		if Classify(err) != sample.Proxy || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s via %s: %v (class %s), want class proxy saying %q", c.scheme, c.proxy, err, Classify(err), c.want)
		}
	}
}

// A proxy that is down is a refused connection, named as the proxy's.
func TestProxyDownIsConnRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m := viaProxy(t, "http://"+addr, Options{})
	_, err = proxiedGet(m, &Endpoint{Scheme: "http", Addr: "example.com:80", Host: "example.com"}, "/")
	if Classify(err) != sample.ConnRefused || !strings.Contains(err.Error(), "proxy "+addr) {
		t.Errorf("%v (class %s), want conn_refused naming proxy %s", err, Classify(err), addr)
	}
}

// A proxy setting the transports cannot use fails each request as proxy.
func TestProxyUnusableSetting(t *testing.T) {
	sh := NewShared(Options{Proxy: func(string, string) (*url.URL, error) {
		return &url.URL{Scheme: "socks5", Host: "127.0.0.1:1080"}, nil
	}})
	t.Cleanup(sh.Close)
	m := sh.NewTransport()
	t.Cleanup(m.Close)
	_, err := proxiedGet(m, &Endpoint{Scheme: "http", Addr: "example.com:80", Host: "example.com"}, "/")
	if Classify(err) != sample.Proxy || !strings.Contains(err.Error(), "socks5") {
		t.Errorf("%v (class %s)", err, Classify(err))
	}
}

// A connection through a proxy cut in the middle of an answer fails
// naming the proxy (a bare "unexpected EOF" says nothing of where), its
// class kept.
func TestProxyCutMidAnswerNamesTheProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
			}()
		}
	}()
	addr := ln.Addr().String()
	m := viaProxy(t, "http://"+addr, Options{})
	_, err = proxiedGet(m, &Endpoint{Scheme: "http", Addr: "example.com:80", Host: "example.com"}, "/")
	if Classify(err) != sample.ConnReset || err == nil || !strings.HasPrefix(err.Error(), "proxy "+addr+": ") {
		t.Errorf("%v (class %s), want conn_reset naming proxy %s", err, Classify(err), addr)
	}
}
