package httpc

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// TestDNSTimeoutIsDNS: a lookup that timed out never reached a server;
// it is the name's failure (dns), not the server's slowness. Before, it
// was counted as timeout.
func TestDNSTimeoutIsDNS(t *testing.T) {
	for _, err := range []error{
		&net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true},
		&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true}},
		fmt.Errorf("dial: %w", &net.DNSError{Err: "no such host", Name: "api.example", IsNotFound: true}),
	} {
		if got := Classify(err); got != sample.DNS {
			t.Errorf("%v: class %v, want dns", err, got)
		}
	}
}

// TestDNSLookupTimeoutThroughDial: the real error of a dial whose lookup
// ran out of time (a resolver that never answers: a dial function that
// waits for the deadline) is dns.
func TestDNSLookupTimeoutThroughDial(t *testing.T) {
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		// A resolver on loopback that reads queries and never answers.
		return net.Dial("udp", ln.LocalAddr().String())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = r.LookupHost(ctx, "never-answered.invalid")
	if err == nil {
		t.Fatal("lookup against a silent resolver succeeded")
	}
	if de, ok := err.(*net.DNSError); !ok || !de.IsTimeout {
		t.Fatalf("lookup error %v is not a DNS timeout", err)
	}
	if got := Classify(err); got != sample.DNS {
		t.Errorf("%v: class %v, want dns", err, got)
	}
}
