package httpc

import (
	"net"
	"testing"
	"time"
)

// cannedLoop answers every request read on each connection with answer,
// from fixed buffers, so that it allocates nothing per request.
func cannedLoop(t *testing.T, answer string) *Endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				buf := make([]byte, 4096)
				out := []byte(answer)
				for {
					// One request per read: the client sends a small
					// request in one write and waits for the answer.
					if _, err := nc.Read(buf); err != nil {
						return
					}
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	a := ln.Addr().String()
	return &Endpoint{Scheme: "http", Addr: a, Host: a}
}

// TestReleaseHeaderStorage: Release leaves a response with no header
// storage; the next answer takes it back from the pool, parses the same
// and, once the pool is warm, costs no allocation.
func TestReleaseHeaderStorage(t *testing.T) {
	ep := cannedLoop(t, "HTTP/1.1 200 OK\r\nX-A: 1\r\nX-B: two\r\nContent-Length: 2\r\n\r\nok")
	c := NewH1()
	defer c.Close()
	req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 5 * time.Second}
	var resp Response
	for i := 0; i < 3; i++ {
		if err := c.RoundTrip(req, &resp); err != nil {
			t.Fatal(err)
		}
		if string(resp.Get("X-A")) != "1" || string(resp.Get("X-B")) != "two" || len(resp.Header) != 3 {
			t.Fatalf("round %d: headers %q", i, resp.Header)
		}
		resp.Release()
		if cap(resp.Header) != 0 || cap(resp.hbuf) != 0 || resp.hb != nil {
			t.Fatalf("round %d: released response keeps %d fields, %d bytes", i, cap(resp.Header), cap(resp.hbuf))
		}
		resp.Release() // twice is harmless
	}
	if raceEnabled {
		return // the race detector makes sync.Pool drop items at random
	}
	allocs := testing.AllocsPerRun(100, func() {
		c.RoundTrip(req, &resp)
		resp.Release()
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per request with Release, want 0", allocs)
	}
}

// TestReleaseDropsHugeHeaderStorage: storage grown by a huge header block
// is not pooled, so it does not stay pinned after its user went idle.
func TestReleaseDropsHugeHeaderStorage(t *testing.T) {
	var r Response
	r.takeHeaderBufs()
	r.hbuf = make([]byte, 0, maxPooledHeader+1)
	hb := r.hb
	r.Release()
	if hb.hbuf != nil {
		t.Fatalf("a %d-byte header buffer went back to the pool", cap(hb.hbuf))
	}
}
