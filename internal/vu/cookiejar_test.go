package vu

import (
	"testing"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
)

// A Set-Cookie answer for a public suffix (co.uk) is not kept: before the
// jar had the public-suffix list, a server under co.uk could set a cookie
// every other .co.uk site was then sent. A cookie for the site's own
// registrable domain still reaches its other hosts. No request is sent:
// the answer is laid where a response leaves it.
func TestCookieForPublicSuffixRefused(t *testing.T) {
	u, _, _ := recUserFor(t, votePlan, "http://127.0.0.1:1", metrics.ErrorOptions{})
	answer := func(host string, setCookies ...string) {
		u.req.Endpoint = &httpc.Endpoint{Scheme: "http", Host: host}
		u.req.PathQuery = []byte("/")
		u.resp.Header = u.resp.Header[:0]
		for _, c := range setCookies {
			u.resp.Header = append(u.resp.Header, httpc.Field{Name: []byte("Set-Cookie"), Value: []byte(c)})
		}
		u.storeCookies(nil)
	}
	sent := func(host string) string {
		return u.cookieHeader(&httpc.Request{Endpoint: &httpc.Endpoint{Scheme: "http", Host: host}, PathQuery: []byte("/")})
	}
	answer("www.example.co.uk", "wide=1; Domain=co.uk; Path=/", "site=2; Domain=example.co.uk; Path=/")
	if got := sent("www.other.co.uk"); got != "" {
		t.Errorf("another .co.uk site is sent %q: a cookie for the public suffix co.uk was kept", got)
	}
	if got := sent("shop.example.co.uk"); got != "site=2" {
		t.Errorf("shop.example.co.uk is sent %q, want site=2 (its registrable domain's cookie)", got)
	}
}
