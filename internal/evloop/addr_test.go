package evloop

import (
	"context"
	"net"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers A queries on loopback UDP: each name in names with its
// addresses, every other name with none.
func dnsServer(t *testing.T, names map[string][]net.IP) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) != 1 {
				continue
			}
			q := m.Questions[0]
			m.Header.Response, m.Header.Authoritative = true, true
			m.Answers = nil
			if q.Type == dnsmessage.TypeA {
				for _, ip := range names[strings.TrimSuffix(q.Name.String(), ".")] {
					var a [4]byte
					copy(a[:], ip.To4())
					m.Answers = append(m.Answers, dnsmessage.Resource{
						Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
						Body:   &dnsmessage.AResource{A: a},
					})
				}
			}
			if out, err := m.Pack(); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// The loop dials one address: a name with several is left to the
// goroutine engine, which falls back across them; a literal or a name
// with one address is the loop's.
func TestAddrIneligibleManyAddresses(t *testing.T) {
	res := dnsServer(t, map[string][]net.IP{
		"one.test":  {net.IPv4(127, 0, 0, 1)},
		"many.test": {net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)},
	})
	for _, c := range []struct {
		addr, want string
	}{
		{"127.0.0.1:80", ""},
		{"[::1]:80", ""},
		{"one.test:80", ""},
		{"many.test:80", "resolves to 2 addresses"},
	} {
		got := addrIneligible(c.addr, res)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.addr, got, c.want)
		}
	}
}
