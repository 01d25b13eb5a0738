package dashboard

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// A run's dashboard shows its report, tokens a server echoed included, to
// whoever can reach it. Three guards keep it the user's own:
//   - a random token in every path, which only the printed URL holds, so
//     another local user or a web page cannot guess where the figures are;
//   - the Host and Origin headers must name the machine by an IP address,
//     localhost or the name --dashboard gave: a DNS-rebinding page
//     (attacker.example resolved to 127.0.0.1) sends its own name, refused;
//   - bounded viewers and connections (maxViewers, maxConns), so a flood
//     of local connections queues in the kernel instead of taking the
//     load's open files.
const (
	maxViewers = 16
	maxConns   = 2 * maxViewers
)

func newToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return hex.EncodeToString(b[:])
}

// hostGuard refuses requests whose Host or Origin names the machine other
// than as allowedHost accepts.
type hostGuard struct {
	name string // the host name --dashboard was given, if not an address
	next http.Handler
}

func newHostGuard(addr string, next http.Handler) *hostGuard {
	g := &hostGuard{next: next}
	if h, _, err := net.SplitHostPort(addr); err == nil && net.ParseIP(h) == nil && h != "" {
		g.name = h
	}
	return g
}

func (g *hostGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.allowed(r.Host) {
		http.Error(w, "stampede dashboard: Host "+r.Host+" refused; open the URL stampede printed", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !g.allowed(u.Host) {
			http.Error(w, "stampede dashboard: Origin refused", http.StatusForbidden)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// allowed accepts an IP address (a browser that navigated to an address
// sends it; a rebinding page cannot), localhost, or the configured name.
func (g *hostGuard) allowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	switch {
	case host == "":
		return false
	case strings.EqualFold(host, "localhost"), g.name != "" && strings.EqualFold(host, g.name):
		return true
	}
	return net.ParseIP(host) != nil
}
