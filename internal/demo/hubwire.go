package demo

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The hub library sends a group's pushes from goroutines of their own, and
// drops one whose connection closed first: an order placed just before a
// kitchen display says goodbye counts in Pushes but never reaches it. The
// e2e tests need what did reach it, so the hub's HTTP handler counts the
// OrderPlaced pushes written to the sockets (hijacked WebSockets and the
// SSE and long-polling response bodies alike). The name appears only as a
// push's target in what the hub writes (the arguments are ids and a
// clock), in the JSON and the MessagePack protocol both.

var pushMark = []byte("OrderPlaced")

// markCounter counts pushMark in a byte stream written in pieces: a mark
// split between two writes still counts once.
type markCounter struct {
	mu   sync.Mutex
	tail []byte // the last len(pushMark)-1 bytes written
	n    *atomic.Uint64
}

func (m *markCounter) wrote(b []byte) {
	if len(b) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := len(pushMark) - 1
	// The seam, the tail and b's first k bytes, is too short for a mark
	// on either side of it: a mark found there is one b completed.
	seam := append(append([]byte(nil), m.tail...), b[:min(len(b), k)]...)
	m.n.Add(uint64(bytes.Count(seam, pushMark) + bytes.Count(b, pushMark)))
	if len(b) >= k {
		m.tail = append(m.tail[:0], b[len(b)-k:]...)
	} else {
		m.tail = append(m.tail, b...)
		if len(m.tail) > k {
			m.tail = m.tail[len(m.tail)-k:]
		}
	}
}

// countWritten wraps the hub's handler.
func (k *kitchen) countWritten(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&pushWriter{ResponseWriter: w, m: &markCounter{n: &k.written}, silence: k.silence}, r)
	})
}

type pushWriter struct {
	http.ResponseWriter
	m       *markCounter
	silence time.Duration
}

func (w *pushWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.m.wrote(b[:n])
	return n, err
}

func (w *pushWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *pushWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *pushWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := rw.Writer.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	cc := &pushConn{Conn: c, m: w.m, silence: w.silence}
	return cc, bufio.NewReadWriter(rw.Reader, bufio.NewWriterSize(cc, rw.Writer.Size())), nil
}

// pushConn is a hijacked connection whose writes are counted.
type pushConn struct {
	net.Conn
	m       *markCounter
	silence time.Duration
}

// Read drops a client silent for clientSilence (see newKitchen): every
// read, a Ping's included, moves the deadline on.
func (c *pushConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.silence))
	return c.Conn.Read(b)
}

func (c *pushConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.m.wrote(b[:n])
	return n, err
}
