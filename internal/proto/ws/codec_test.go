//go:build linux

package ws

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawTLSServer is rawServer behind TLS (wss://); the config returned
// trusts it.
func rawTLSServer(t *testing.T, first func(i int) []byte) (url string, peers chan net.Conn, trust *tls.Config) {
	t.Helper()
	// httptest's server has a certificate for 127.0.0.1; only its
	// config is used.
	cert := httptest.NewUnstartedServer(nil)
	cert.StartTLS()
	cfg, roots := cert.TLS.Clone(), x509.NewCertPool()
	roots.AddCert(cert.Certificate())
	cert.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = nil
	return "wss://" + ln.Addr().String() + "/", serveRaw(t, tls.NewListener(ln, cfg), first), &tls.Config{RootCAs: roots}
}

// tcpOf is the TCP socket under a server's side, TLS or not.
func tcpOf(nc net.Conn) *net.TCPConn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn().(*net.TCPConn)
	}
	return nc.(*net.TCPConn)
}

// countHandler counts messages and, unless count is set, keeps their
// text.
type countHandler struct {
	count bool
	mu    sync.Mutex
	msgs  []string
	n     atomic.Int64
}

func (h *countHandler) Message(_ *Conn, _ MessageType, data []byte) error {
	if !h.count {
		h.mu.Lock()
		h.msgs = append(h.msgs, string(data))
		h.mu.Unlock()
	}
	h.n.Add(1)
	return nil
}

func (h *countHandler) Closed(*Conn, *Disconnect) *Disconnect { return nil }

type framingCase struct {
	name  string
	send  []byte
	after string // "": wait for the client to end; "eof": close; "rst": reset
	// want is how the connection ends, how many messages it delivered
	// and which frames the client sent back, as gorilla's own reader did
	// (recorded with gorilla reading, before this codec read every
	// connection).
	want string
}

func framingCases() []framingCase {
	closeFrame := func(code int, text string) []byte {
		p := []byte{byte(code >> 8), byte(code)}
		return frame(8, true, append(p, text...))
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	ok := frame(1, true, []byte("fine"))
	return []framingCase{
		{"rsv1", cat(ok, []byte{0xC1, 0}), "", `protocol_error other code=0 text="websocket: RSV1 set"; 1 messages; client sent [8 "\x03\xeaRSV1 set"]`},
		{"rsv2 and rsv3", []byte{0xB1, 0}, "", `protocol_error other code=0 text="websocket: RSV2 set, RSV3 set"; 0 messages; client sent [8 "\x03\xeaRSV2 set, RSV3 set"]`},
		{"bad opcode", []byte{0x83, 0}, "", `protocol_error other code=0 text="websocket: bad opcode 3"; 0 messages; client sent [8 "\x03\xeabad opcode 3"]`},
		{"masked", []byte{0x81, 0x81, 1, 2, 3, 4, 'x'}, "", `protocol_error other code=0 text="websocket: bad MASK"; 0 messages; client sent [8 "\x03\xeabad MASK"]`},
		{"long control", frame(9, true, make([]byte, 126)), "", `protocol_error other code=0 text="websocket: len > 125 for control"; 0 messages; client sent [8 "\x03\xealen > 125 for control"]`},
		{"control without FIN", frame(9, false, nil), "", `protocol_error other code=0 text="websocket: FIN not set on control"; 0 messages; client sent [8 "\x03\xeaFIN not set on control"]`},
		{"continuation after FIN", frame(0, true, []byte("x")), "", `protocol_error other code=0 text="websocket: continuation after FIN"; 0 messages; client sent [8 "\x03\xeacontinuation after FIN"]`},
		{"data before FIN", cat(frame(1, false, []byte("a")), frame(1, true, []byte("b"))), "", `protocol_error other code=0 text="websocket: data before FIN"; 0 messages; client sent [8 "\x03\xeadata before FIN"]`},
		{"bad close code", closeFrame(1005, ""), "", `protocol_error other code=0 text="websocket: bad close code 1005"; 0 messages; client sent [8 "\x03\xeabad close code 1005"]`},
		{"close reason not UTF-8", closeFrame(1000, "\xff"), "", `protocol_error other code=0 text="websocket: invalid utf8 payload in close frame"; 0 messages; client sent [8 "\x03\xeainvalid utf8 payload in close frame"]`},
		{"close going away", cat(ok, closeFrame(1001, "bye")), "", `server_close conn_reset code=1001 text="bye"; 1 messages; client sent [8 "\x03\xe9"]`},
		{"close try again", closeFrame(1013, ""), "", `server_close server_error code=1013 text=""; 0 messages; client sent [8 "\x03\xf5"]`},
		{"close 4000", closeFrame(4000, "app"), "", `server_close other code=4000 text="app"; 0 messages; client sent [8 "\x0f\xa0"]`},
		{"close empty", frame(8, true, nil), "", `server_close conn_reset code=1005 text=""; 0 messages; client sent [8 ""]`},
		{"close one byte", frame(8, true, []byte{3}), "", `server_close conn_reset code=1005 text=""; 0 messages; client sent [8 ""]`},
		{"over the read limit", frame(2, true, make([]byte, 1001)), "", `protocol_error other code=0 text="message larger than the read limit of 1000 bytes"; 0 messages; client sent [8 "\x03\xf1"]`},
		{"over the read limit in fragments", cat(frame(2, false, make([]byte, 600)), frame(0, true, make([]byte, 600))), "", `protocol_error other code=0 text="message larger than the read limit of 1000 bytes"; 0 messages; client sent [8 "\x03\xf1"]`},
		{"length with top bit", []byte{0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, "", `protocol_error other code=0 text="message larger than the read limit of 1000 bytes"; 0 messages; client sent []`},
		{"ping then close", cat(frame(9, true, []byte("hi")), ok, closeFrame(1000, "")), "", `server_close conn_reset code=1000 text=""; 1 messages; client sent [10 "hi" 8 "\x03\xe8"]`},
		{"end in a frame", cat(ok, []byte{0x81, 10, 'a', 'b'}), "eof", `network_reset conn_reset code=0 text="connection closed without a close frame"; 1 messages; client sent []`},
		{"end in a header", cat(ok, []byte{0x81, 126, 0}), "eof", `network_reset conn_reset code=0 text="connection closed without a close frame"; 1 messages; client sent []`},
		{"end between frames", cat(ok, frame(2, true, []byte("x"))), "eof", `network_reset conn_reset code=0 text="connection closed without a close frame"; 2 messages; client sent []`},
		{"reset", cat(ok, ok), "rst", `network_reset conn_reset code=0 text="read tcp ADDR->ADDR: read: connection reset by peer"; 2 messages; client sent []`},
	}
}

// TestFramingErrorsAsGorilla: every connection parses frames with the one
// codec (frames.go), whether it is read on readiness, by a goroutine, or
// over TLS; every bad frame and every end is classified as gorilla's
// reader classified it (same reason, class, code and text), and the
// client answers with the same frames. Before, wss:// connections were
// read by gorilla and ws:// ones by the codec: two readers to keep alike.
func TestFramingErrorsAsGorilla(t *testing.T) {
	addr := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	run := func(t *testing.T, mode string, tc framingCase) string {
		url, peers := "", chan net.Conn(nil)
		o := &Options{goroutineReads: mode == "goroutine", ReadLimit: 1000, CloseTimeout: 100 * time.Millisecond}
		if mode == "tls" {
			url, peers, o.TLS = rawTLSServer(t, nil)
		} else {
			url, peers = rawServer(t, nil)
		}
		h := &countHandler{}
		c, err := Dial(context.Background(), url, nil, o, h)
		if err != nil {
			t.Fatal(err)
		}
		if (c.reg != nil) != (mode == "readiness") {
			t.Fatalf("%s: read on readiness is %v", mode, c.reg != nil)
		}
		nc := <-peers
		var frames []string
		got := make(chan struct{})
		go func() {
			defer close(got)
			clientFrames(nc, func(op byte, p []byte) { frames = append(frames, fmt.Sprintf("%d %q", op, p)) })
		}()
		nc.Write(tc.send)
		switch tc.after {
		case "eof":
			if tlc, ok := nc.(*tls.Conn); ok {
				tlc.CloseWrite()
			}
			tcpOf(nc).CloseWrite()
		case "rst":
			tcpOf(nc).SetLinger(0)
			// The reset must come after the client has read the frames,
			// or it may discard them unread.
			waitCount(t, "messages before the reset", h.n.Load, 2)
			tcpOf(nc).Close()
		}
		select {
		case <-c.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the connection did not end")
		}
		<-got
		d := c.Disconnect()
		return fmt.Sprintf("%s %s code=%d text=%q; %d messages; client sent %v",
			d.Reason, d.Class, d.Code, addr.ReplaceAllString(d.Text, "ADDR"), h.n.Load(), frames)
	}
	for _, tc := range framingCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"readiness", "goroutine", "tls"} {
				if got := run(t, mode, tc); got != tc.want {
					t.Errorf("%s:\n got %s\nwant %s", mode, got, tc.want)
				}
			}
		})
	}
}

// A frame that comes in the 101 answer's own packet, with nothing after
// it, is delivered at once however the connection is read: a reading
// goroutine once read the socket again before handling the frames it
// already had, and such a message waited for the next bytes.
func TestFrameWithTheUpgradeAlone(t *testing.T) {
	for _, mode := range []string{"readiness", "goroutine", "tls"} {
		t.Run(mode, func(t *testing.T) {
			first := func(int) []byte { return frame(1, true, []byte("hello")) }
			url, peers := "", chan net.Conn(nil)
			o := &Options{goroutineReads: mode == "goroutine"}
			if mode == "tls" {
				url, peers, o.TLS = rawTLSServer(t, first)
			} else {
				url, peers = rawServer(t, first)
			}
			h := &countHandler{}
			c, err := Dial(context.Background(), url, nil, o, h)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Abort()
			<-peers
			waitCount(t, "the message sent with the 101", h.n.Load, 1)
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.msgs) != 1 || h.msgs[0] != "hello" {
				t.Errorf("messages %q, want [hello]", h.msgs)
			}
		})
	}
}
