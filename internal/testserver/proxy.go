package testserver

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ForwardProxy is a forward proxy on loopback, as a corporate one stands
// between a generator and its target: absolute-form requests are sent on
// to the origin, CONNECT opens a tunnel, and every request it is sent is
// logged. Whatever host a request names (a name no resolver answers, say),
// it goes to 127.0.0.1 on that port, so nothing leaves the machine and
// nothing reaches the target but through the proxy.
type ForwardProxy struct {
	*httptest.Server
	mu sync.Mutex
	// log is "METHOD request-target Proxy-Authorization", one line per
	// request.
	log []string
	// auth, when set, is the Proxy-Authorization the proxy requires;
	// refuseConnect answers every CONNECT 403.
	auth          string
	refuseConnect bool
}

// NewForwardProxy starts a proxy that closes when the test ends.
func NewForwardProxy(t testing.TB) *ForwardProxy {
	p := &ForwardProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// RequireAuth makes the proxy answer 407 to any request without this
// Proxy-Authorization.
func (p *ForwardProxy) RequireAuth(auth string) {
	p.mu.Lock()
	p.auth = auth
	p.mu.Unlock()
}

// SetRefuseConnect makes the proxy answer every CONNECT 403, or tunnel
// again.
func (p *ForwardProxy) SetRefuseConnect(refuse bool) {
	p.mu.Lock()
	p.refuseConnect = refuse
	p.mu.Unlock()
}

func loopbackOf(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	return net.JoinHostPort("127.0.0.1", port)
}

func (p *ForwardProxy) serve(w http.ResponseWriter, r *http.Request) {
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
	// A copy that fails has lost its client, which is all it could say.
	_, _ = io.Copy(w, resp.Body)
}

func (p *ForwardProxy) tunnel(w http.ResponseWriter, r *http.Request, refuse bool) {
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
	// Either side's end ends the tunnel; a failed write or copy is one.
	_, _ = io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() { _, _ = io.Copy(up, down); up.Close() }()
	_, _ = io.Copy(down, up)
	down.Close()
}

// Requests is the proxy's log so far: "METHOD request-target auth".
func (p *ForwardProxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// Seen counts the logged requests that start with prefix.
func (p *ForwardProxy) Seen(prefix string) (n int64) {
	for _, l := range p.Requests() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// Lines is how many requests the proxy has logged.
func (p *ForwardProxy) Lines() int64 { return int64(len(p.Requests())) }
