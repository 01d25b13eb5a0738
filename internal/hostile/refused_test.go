package hostile

import (
	"errors"
	"net"
	"runtime"
	"syscall"
	"testing"
)

// Refused's port refuses connections and, where it can be reserved, no
// listener can take it while the test runs.
func TestRefused(t *testing.T) {
	addr := Refused(t)
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s: connected", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		return
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a listener took %s", addr)
	}
}
