package hostile

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// HTTP/2 servers, h2c or h2 over TLS. Requests() counts the request header
// blocks (HEADERS and its CONTINUATIONs) a server has read, whatever it
// did with them: a client that resends behind its user's back shows here
// as more requests than it reported.

// H2Server is a hostile HTTP/2 server.
type H2Server struct {
	*Server
	// ClientTLS is a client configuration that trusts the server's
	// certificate and offers "h2" (nil for h2c).
	ClientTLS *tls.Config
}

// H2Conn is one connection of an H2Server, for its behaviours. Writes are
// serialised; the connection's reader answers SETTINGS and PING and opens
// flow-control windows by itself.
type H2Conn struct {
	s   *Server
	c   net.Conn
	wmu sync.Mutex
	fr  *http2.Framer // write side only
	enc *hpack.Encoder
	buf bytes.Buffer
	wg  sync.WaitGroup
	// Stream is the number of requests read on this connection so far.
	Streams int
}

// Write runs fn with the connection's framer, serialised with other writes.
func (h *H2Conn) Write(fn func(fr *http2.Framer) error) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_ = h.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return fn(h.fr)
}

// Block HPACK-encodes fields with the connection's encoder. Call it only
// inside Write, so blocks reach the client in the order they were encoded.
func (h *H2Conn) Block(fields ...string) []byte {
	h.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = h.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return h.buf.Bytes()
}

// Respond answers stream with status and body.
func (h *H2Conn) Respond(stream uint32, status, body string) error {
	return h.Write(func(fr *http2.Framer) error {
		blk := h.Block(":status", status, "content-length", itoa(len(body)))
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: blk, EndHeaders: true, EndStream: body == ""}); err != nil {
			return err
		}
		if body != "" {
			return fr.WriteData(stream, true, []byte(body))
		}
		return nil
	})
}

// Forever runs write in a goroutine until it fails (the client is gone)
// or the server closes. Each call is one frame or a few.
func (h *H2Conn) Forever(write func(fr *http2.Framer) error) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			select {
			case <-h.s.quit:
				return
			default:
			}
			if err := h.Write(write); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					continue
				}
				return
			}
		}
	}()
}

// ServeH2 runs an HTTP/2 server whose onRequest is called with each
// request's stream once its header block is read; returning false closes
// the connection.
func ServeH2(t testing.TB, useTLS bool, onRequest func(h *H2Conn, stream uint32) bool) *H2Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	out := &H2Server{}
	if useTLS {
		cert, pool := selfSigned(t)
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{http2.NextProtoTLS}})
		out.ClientTLS = &tls.Config{RootCAs: pool, NextProtos: []string{http2.NextProtoTLS}}
	}
	out.Server = Serve(t, ln, func(s *Server, c net.Conn) {
		h := &H2Conn{s: s, c: c, fr: http2.NewFramer(c, nil)}
		h.enc = hpack.NewEncoder(&h.buf)
		defer h.wg.Wait()
		defer c.Close()
		h.serve(onRequest)
	})
	if useTLS {
		out.URL = "https://" + out.Addr
	}
	return out
}

// serve reads the client's frames until it goes or onRequest says stop.
func (h *H2Conn) serve(onRequest func(h *H2Conn, stream uint32) bool) {
	br := bufio.NewReader(h.c)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	if h.Write(func(fr *http2.Framer) error {
		return fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	}) != nil {
		return
	}
	rd := http2.NewFramer(nil, br)
	for {
		f, err := rd.ReadFrame()
		if err != nil {
			return
		}
		var stream uint32
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.Write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = h.Write(func(fr *http2.Framer) error { return fr.WritePing(true, f.Data) })
			}
		case *http2.DataFrame:
			if n := f.Length; n > 0 {
				_ = h.Write(func(fr *http2.Framer) error {
					_ = fr.WriteWindowUpdate(0, n)
					return fr.WriteWindowUpdate(f.StreamID, n)
				})
			}
		case *http2.HeadersFrame:
			if f.HeadersEnded() {
				stream = f.StreamID
			}
		case *http2.ContinuationFrame:
			if f.HeadersEnded() {
				stream = f.StreamID
			}
		}
		if stream != 0 {
			h.s.requests.Add(1)
			h.Streams++
			if !onRequest(h, stream) {
				return
			}
		}
	}
}

// H2OK answers every request 200 "ok": the well-behaved baseline.
func H2OK(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		return h.Respond(stream, "200", "ok") == nil
	})
}

// H2Rotate answers every request and sends GOAWAY (NO_ERROR) with the
// n-th request of each connection before answering it, then closes after
// the answer, as nginx does after keepalive_requests.
func H2Rotate(t testing.TB, useTLS bool, n int) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		if h.Streams < n {
			return h.Respond(stream, "200", "ok") == nil
		}
		_ = h.Write(func(fr *http2.Framer) error { return fr.WriteGoAway(stream, http2.ErrCodeNo, nil) })
		_ = h.Respond(stream, "200", "ok")
		return false
	})
}

// H2GoAwayEvery answers each request with a GOAWAY whose last stream is
// below it (so the request was refused unprocessed), then closes.
func H2GoAwayEvery(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		_ = h.Write(func(fr *http2.Framer) error {
			return fr.WriteGoAway(max(stream, 2)-2, http2.ErrCodeNo, []byte("going away"))
		})
		return false
	})
}

// H2RefusedStream answers each request with RST_STREAM REFUSED_STREAM and
// keeps the connection.
func H2RefusedStream(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		return h.Write(func(fr *http2.Framer) error { return fr.WriteRSTStream(stream, http2.ErrCodeRefusedStream) }) == nil
	})
}

// H2EndlessContinuation answers with a HEADERS frame and then CONTINUATION
// frames of valid header fields forever, never ending the block.
func H2EndlessContinuation(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		i := 0
		h.Forever(func(fr *http2.Framer) error {
			i++
			if i == 1 {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: h.Block(":status", "200")})
			}
			return fr.WriteContinuation(stream, false, h.Block("x-filler-"+itoa(i), strings.Repeat("h", 200)))
		})
		return true
	})
}

// H2FlowControl answers each request with WINDOW_UPDATEs that take the
// client's connection send window past 2^31-1, a FLOW_CONTROL_ERROR
// (RFC 9113 section 6.9.1), and never answers.
func H2FlowControl(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		return h.Write(func(fr *http2.Framer) error {
			_ = fr.WriteWindowUpdate(0, 1<<31-1)
			return fr.WriteWindowUpdate(0, 1<<31-1)
		}) == nil
	})
}

// H2PushPromise promises a pushed stream (the client disabled push) and
// then answers.
func H2PushPromise(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		_ = h.Write(func(fr *http2.Framer) error {
			return fr.WritePushPromise(http2.PushPromiseParam{StreamID: stream, PromiseID: 2 * uint32(h.Streams),
				BlockFragment: h.Block(":method", "GET", ":scheme", "http", ":path", "/pushed", ":authority", "x"), EndHeaders: true})
		})
		return h.Respond(stream, "200", "ok") == nil
	})
}

// H2HPACKBomb answers with a header block of 16 KB that decodes to about
// 48 MB: one 4 KB field put in the dynamic table, then referenced by index
// over and over.
func H2HPACKBomb(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		return h.Write(func(fr *http2.Framer) error {
			var blk bytes.Buffer
			blk.Write(h.Block(":status", "200"))
			// A literal with incremental indexing and a new name (0x40).
			blk.Write([]byte{0x40, 6})
			blk.WriteString("x-bomb")
			val := strings.Repeat("b", 4000)
			const rest = 4000 - 127 // past the 7-bit prefix, in 7-bit groups
			blk.Write([]byte{0x7f, byte(rest&0x7f) | 0x80, byte(rest >> 7)})
			blk.WriteString(val)
			for blk.Len() < 16000 {
				blk.WriteByte(0x80 | 62) // the newest dynamic entry
			}
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: blk.Bytes(), EndHeaders: true, EndStream: true})
		}) == nil
	})
}

// H2SettingsFlood sends SETTINGS frames forever and never answers.
func H2SettingsFlood(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		h.Forever(func(fr *http2.Framer) error {
			return fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
		})
		return true
	})
}

// H2PingFlood sends PING frames forever and never answers.
func H2PingFlood(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		h.Forever(func(fr *http2.Framer) error { return fr.WritePing(false, [8]byte{1}) })
		return true
	})
}

// H2RSTFlood answers a connection's first request, then meets each later
// one with RST_STREAM frames for that first, closed stream, forever.
func H2RSTFlood(t testing.TB, useTLS bool) *H2Server {
	return ServeH2(t, useTLS, func(h *H2Conn, stream uint32) bool {
		if h.Streams == 1 {
			return h.Respond(stream, "200", "ok") == nil
		}
		h.Forever(func(fr *http2.Framer) error { return fr.WriteRSTStream(1, http2.ErrCodeCancel) })
		return true
	})
}
