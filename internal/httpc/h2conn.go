package httpc

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Windows we grant the server. Answers are read as they come and dropped
// (or kept up to MaxKeptBody), so a big window costs no memory and saves
// WINDOW_UPDATE round trips on big bodies.
const (
	h2StreamWindow = 4 << 20
	h2ConnWindow   = 16 << 20
	h2MaxFrame     = 16 << 10 // SETTINGS_MAX_FRAME_SIZE we accept (the default)
	// h2MaxStrikes is how many frames in a row a connection may bring that
	// move no answer forward (SETTINGS, PING, RST_STREAM of closed streams,
	// empty DATA, unknown frames): a flood of them is the server's fault
	// and closes the connection after bounded work.
	h2MaxStrikes = 1000
	// h2MaxStreamID is the last client stream id: past it a connection
	// takes no new stream, as after a GOAWAY.
	h2MaxStreamID = 1<<31 - 1
)

// h2conn is one HTTP/2 connection. In per-user mode one goroutine (its
// user's) does everything on it, one stream at a time, so it needs no
// locks and no reader goroutine.
type h2conn struct {
	ep *Endpoint
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	fr *http2.Framer

	enc    *hpack.Encoder
	encBuf bytes.Buffer
	dec    *hpack.Decoder
	// interned holds header names and values already sent, so encoding a
	// request that repeats them converts no bytes to strings.
	interned    map[string]string
	lowerBuf    []byte
	lastLen     int
	lastLenText string
	blk         h2block

	needFlush bool // acks are buffered and must go before we block
	nextID    uint32

	// The server's settings and our send windows.
	peerMaxFrame   uint32
	peerInitWindow int64
	peerMaxStreams uint32
	gotSettings    bool
	told           bool // the certificate watcher knows the server answered (per-user mode)
	// lookedAt is when the last answer was read, as time since clockBase
	// (0: a look is due before reuse).
	lookedAt   time.Duration
	sendWindow int64

	// Our receive side of the connection window.
	recvAvail   int64
	recvUnacked int64

	goaway     bool
	goawayLast uint32
	goawayCode http2.ErrCode
	goawayText string

	strikes   int
	maxHeader int
	st        *h2stream // per-user mode: the exchange in flight (nil between them)
	// Shared mode (h2shared.go): the streams in flight by id, and the
	// connection's place in the pool; both nil in per-user mode.
	streams map[uint32]*h2stream
	mux     *h2mux
	blkSt   *h2stream // the stream of the header block being decoded
	blkID   uint32    // and its id (blkSt may have moved on to another)

	// peek looks at the socket without reading (nil: cannot); over TLS
	// the look reads through the tls.Conn (tc, rec) into src.
	raw    syscall.RawConn
	peekFn func(fd uintptr) bool
	peeked peekState
	one    [1]byte
	tc     *tls.Conn
	rec    *recConn
	src    h2src
	look   [64]byte
}

// h2src is what the framer reads: bytes a look took off the connection
// first, then the connection.
type h2src struct {
	nc      net.Conn
	pending []byte
}

func (s *h2src) Read(p []byte) (int, error) {
	if len(s.pending) > 0 {
		n := copy(p, s.pending)
		s.pending = s.pending[n:]
		return n, nil
	}
	return s.nc.Read(p)
}

func newH2conn(ep *Endpoint, nc net.Conn, maxHeader int) *h2conn {
	c := &h2conn{
		ep: ep, nc: nc,
		src:            h2src{nc: nc},
		bw:             bufio.NewWriterSize(nc, 4<<10),
		interned:       make(map[string]string),
		nextID:         1,
		peerMaxFrame:   h2MaxFrame,
		peerInitWindow: 65535,
		peerMaxStreams: ^uint32(0),
		sendWindow:     65535,
		recvAvail:      h2ConnWindow,
		maxHeader:      maxHeader,
	}
	c.br = bufio.NewReaderSize(&c.src, 16<<10)
	c.fr = http2.NewFramer(c.bw, c.br)
	c.fr.SetMaxReadFrameSize(h2MaxFrame)
	c.fr.SetReuseFrames()
	c.enc = hpack.NewEncoder(&c.encBuf)
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(maxHeader)
	// Buffered now, so nothing (an ack of the server's SETTINGS read
	// before our first request) can go out ahead of it.
	c.preface()
	if tc, ok := nc.(*tls.Conn); ok {
		c.tc = tc
		c.rec, _ = tc.NetConn().(*recConn)
		return c
	}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
			c.peekFn = c.peekOnce
		}
	}
	return c
}

// preface writes the client preface, our SETTINGS and the connection
// window into the buffer; the first flush (the first request's) sends
// them. A buffered write to a fresh buffer cannot fail.
func (c *h2conn) preface() {
	_, _ = c.bw.WriteString(http2.ClientPreface)
	_ = c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(c.maxHeader)},
	)
	_ = c.fr.WriteWindowUpdate(0, h2ConnWindow-65535)
}

// usable reports whether a new stream may start on the connection.
func (c *h2conn) usable() bool {
	return !c.goaway && c.nextID < h2MaxStreamID && c.peerMaxStreams > 0
}

// peek looks at the socket (under TLS: its raw bytes) without blocking.
func (c *h2conn) peek() peekState {
	if c.br.Buffered() > 0 || len(c.src.pending) > 0 {
		return peekData
	}
	if c.tc != nil {
		return c.lookTLS()
	}
	if c.raw == nil {
		return peekIdle
	}
	if err := c.raw.Read(c.peekFn); err != nil {
		c.peeked = peekClosed
	}
	return c.peeked
}

// lookTLS looks through the tls.Conn, as H1's settleTLS does (peektls.go):
// records that carry no frame (a session ticket) are consumed there, and
// frame bytes it returns are kept for the framer.
func (c *h2conn) lookTLS() peekState {
	if c.rec == nil || c.rec.rc == nil {
		return peekIdle
	}
	c.rec.looking = true
	n, err := c.tc.Read(c.look[:])
	c.rec.looking = false
	switch {
	case n > 0:
		c.src.pending = c.look[:n]
		return peekData
	case err == errWouldBlock:
		return peekIdle
	case isTimeout(err):
		// A record only partly arrived: the frame read waits for it.
		return peekData
	}
	return peekClosed
}

// drainIdle handles the frames an idle connection received since its last
// answer (SETTINGS, PING, WINDOW_UPDATE, GOAWAY) before a request reuses
// it. A frame cut short waits at most until the read deadline the caller
// set. It returns an error
// when the connection cannot carry the request: the caller then dials a
// new one, which resends nothing, since nothing was sent on this one.
func (c *h2conn) drainIdle() error {
	for c.usable() {
		switch c.peek() {
		case peekIdle:
			return nil
		case peekClosed:
			return ErrServerClosed
		}
		if err := c.step(); err != nil {
			return err
		}
	}
	return ErrServerClosed
}

// flushIfBlocking sends buffered acks before a read that would block, so
// a server waiting on our SETTINGS ack or PING answer gets it.
func (c *h2conn) flushIfBlocking() error {
	if c.needFlush && c.br.Buffered() < 9 {
		c.needFlush = false
		return c.bw.Flush()
	}
	return nil
}

// strike counts a frame that moved no answer forward.
func (c *h2conn) strike(what string) error {
	c.strikes++
	if c.strikes > h2MaxStrikes {
		return h2Violation(http2.ErrCodeEnhanceYourCalm, "more than %d frames in a row moved no answer forward (the last: %s)", h2MaxStrikes, what)
	}
	return nil
}

// closeWith tells the server why we close (best effort, briefly) and
// closes the socket.
func (c *h2conn) closeWith(err error) {
	if ce, ok := err.(*h2ConnError); ok {
		// Best effort: the connection closes whether the GOAWAY goes
		// out or not.
		_ = c.nc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		last := uint32(0)
		_ = c.fr.WriteGoAway(last, ce.code, nil)
		c.bw.Flush()
	}
	c.nc.Close()
}

// release drops every buffer and table, so a closed connection that is
// still referenced somewhere holds none of them.
func (c *h2conn) release() {
	c.br, c.bw, c.fr, c.enc, c.dec, c.interned, c.st, c.blkSt = nil, nil, nil, nil, nil, nil, nil, nil
	c.src, c.tc, c.rec = h2src{}, nil, nil
	c.encBuf = bytes.Buffer{}
}
