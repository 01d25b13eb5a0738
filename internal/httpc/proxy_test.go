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
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// testProxy is a forward proxy on loopback: absolute-form requests are
// sent on to the origin, CONNECT opens a tunnel, and every request it
// was sent is logged. Whatever host a request names, it goes to
// 127.0.0.1 on that port, so nothing leaves the machine.
type testProxy struct {
	*httptest.Server
	mu sync.Mutex
	// log is "METHOD request-target auth", one line per request.
	log []string
	// auth, when set, is the Proxy-Authorization the proxy requires;
	// refuseConnect answers every CONNECT 403.
	auth          string
	refuseConnect bool
}

func newTestProxy(t *testing.T) *testProxy {
	p := &testProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func loopbackOf(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	return net.JoinHostPort("127.0.0.1", port)
}

func (p *testProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.log = append(p.log, r.Method+" "+r.RequestURI+" "+r.Header.Get("Proxy-Authorization"))
	auth, refuse := p.auth, p.refuseConnect
	p.mu.Unlock()
	if auth != "" && r.Header.Get("Proxy-Authorization") != auth {
		w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, refuse)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Host = loopbackOf(r.URL.Host)
	out.Header.Del("Proxy-Authorization")
	resp, err := http.DefaultTransport.(*http.Transport).RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func (p *testProxy) tunnel(w http.ResponseWriter, r *http.Request, refuse bool) {
	if refuse {
		http.Error(w, "not here", http.StatusForbidden)
		return
	}
	up, err := net.Dial("tcp", loopbackOf(r.Host))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	down, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		up.Close()
		return
	}
	io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() { io.Copy(up, down); up.Close() }()
	io.Copy(down, up)
	down.Close()
}

func (p *testProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

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
	px := newTestProxy(t)
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
	if got := px.requests(); strings.Join(got, "\n") != strings.Join(want, "\n") {
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
		px := newTestProxy(t)
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
		if got := px.requests(); len(got) != 1 || got[0] != "CONNECT "+host+" " {
			t.Errorf("protocol %d: the proxy saw %q, want one CONNECT %s", proto, got, host)
		}
	}
}

// A proxy that wants credentials (407), to a plain-http request or to
// CONNECT, and a CONNECT refused, fail as class proxy, saying so.
func TestProxyRefusalsAreClassProxy(t *testing.T) {
	px := newTestProxy(t)
	px.auth = "Basic YW5uOnB3"
	for _, c := range []struct {
		proxy, scheme, want string
		refuse              bool
	}{
		{px.URL, "http", "asked for authentication (407)", false},
		{px.URL, "https", "answered CONNECT example.com:443 with 407", false},
		{"http://ann:wrong@" + px.Listener.Addr().String(), "http", "refused the credentials", false},
		{"http://ann:pw@" + px.Listener.Addr().String(), "https", "answered CONNECT example.com:443 with 403", true},
	} {
		px.mu.Lock()
		px.refuseConnect = c.refuse
		px.mu.Unlock()
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
