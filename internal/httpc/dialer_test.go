package httpc

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
)

// Users take the source addresses in turn, now that users of one address
// share its dialer rather than each keeping a copy.
func TestH1SourceAddressesInTurn(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		seen = append(seen, host)
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ep := endpointFor(t, srv.URL)
	sh := NewShared(Options{SourceAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}})
	defer sh.Close()
	for i := 0; i < 4; i++ {
		tr := sh.NewTransport()
		var resp Response
		if err := tr.RoundTrip(get(ep, "/"), &resp); err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		tr.Close()
	}
	want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("server saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("server saw %v, want %v", seen, want)
		}
	}
}
