package httpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// H1 is the lean HTTP/1.1 client of one virtual user: at most one open
// connection per endpoint, used for one request at a time, as a browser tab
// or a mobile app would.
type H1 struct {
	conns []*h1conn
	// NewConnPerRequest closes the connection after each answer.
	NewConnPerRequest bool
	// MaxHeaderBytes bounds an answer's header block and MaxKeptBody the
	// body bytes kept for KeepBody (0: DefaultMaxHeaderBytes and
	// DefaultMaxKeptBody).
	MaxHeaderBytes int
	MaxKeptBody    int
	// ud dials the user's connections (dial.go); alpn is what its TLS
	// handshakes offer.
	ud   *userDial
	alpn []string

	// current is the connection a request is using right now, so Interrupt
	// (called from another goroutine) can cut it off.
	current     atomic.Pointer[h1conn]
	interrupted atomic.Bool
	// stopDial cancels the dial or the wait for a connection slot in
	// flight: a user there has no connection whose deadline Interrupt
	// could cut, and would otherwise hold the end of the run for its whole
	// timeout. Its context is made per dial: one kept per user (with the
	// channel and child map every dial gave it) was about 450 bytes of
	// every idle connection.
	stopDial atomic.Pointer[context.CancelFunc]
}

// ErrInterrupted is returned for requests cut off by Interrupt.
var ErrInterrupted = errors.New("request interrupted at the end of the run")

// Interrupt cuts off the request in flight, if any, and makes every later
// request fail at once. It may be called from any goroutine.
func (c *H1) Interrupt() {
	c.interrupted.Store(true)
	if stop := c.stopDial.Load(); stop != nil {
		(*stop)()
	}
	if hc := c.current.Load(); hc != nil {
		hc.nc.SetDeadline(time.Unix(1, 0))
	}
}

type h1conn struct {
	ep *Endpoint
	nc net.Conn
	// tc is nc over TLS: raw looks at the socket see records, not the
	// answer's bytes, so a look there is settled through it (peektls.go);
	// rec is the socket under it and tin what answers are read through.
	tc  *tls.Conn
	rec *recConn
	tin *tlsIn
	// br is borrowed from readers only while an answer is being read: an
	// idle connection holds no buffer, which is most of the memory of a
	// user that spends its time thinking.
	br     *bufio.Reader
	reused bool
	// rc and peekFn are made once per connection so that looking at the
	// socket between answers costs a system call and no allocation.
	rc     syscall.RawConn
	peekFn func(fd uintptr) bool
	peeked peekState
	one    [1]byte
	// lookedAt is when the look after the last answer found the socket
	// idle, as time since clockBase (0: no such look stands): a reuse soon
	// after needs no look of its own.
	lookedAt time.Duration
}

// clockBase turns clock readings into durations, so a connection keeps 8
// bytes for lookedAt rather than a time.Time's 24.
var clockBase = time.Now()

// recheckAfter is how long the look after an answer vouches for the
// connection: a user that sends its next request sooner (one that does not
// think, a few microseconds later) skips the look before reuse, one system
// call of the two each kept-alive request paid. Bytes or a close that come
// in that window are found as they were found just after a look: by the
// next answer's read. A var so a test can widen it.
var recheckAfter = 50 * time.Microsecond

type peekState uint8

const (
	peekIdle   peekState = iota // nothing waiting: the connection is usable
	peekData                    // bytes nobody asked for
	peekClosed                  // EOF or an error: the server closed it
)

// peek looks at the socket without blocking or consuming anything. Go's own
// read with a past deadline would not look at the socket at all.
func (hc *h1conn) peek() peekState {
	if hc.br != nil && hc.br.Buffered() > 0 {
		return peekData
	}
	if hc.tc != nil {
		hc.peeked = hc.settleTLS()
		return hc.peeked
	}
	if hc.rc == nil {
		return peekIdle
	}
	if err := hc.rc.Read(hc.peekFn); err != nil {
		// Recorded too: RoundTrip reads hc.peeked after the call, and a
		// value left from an earlier look would keep a dead connection.
		hc.peeked = peekClosed
		return peekClosed
	}
	return hc.peeked
}

// NewH1 returns an empty client with a run of its own (tests).
func NewH1() *H1 {
	sh := NewShared(Options{})
	return &H1{ud: &userDial{sh: sh, dialer: &net.Dialer{}}, alpn: alpnH1}
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writers = sync.Pool{New: func() any {
		o := &outBuf{b: make([]byte, 0, 1024)}
		o.fn = o.writeOnce
		return o
	}}
)

// outBuf is a pooled request buffer with what writing it to a raw socket
// needs, so a connection holds none of it between requests.
type outBuf struct {
	b     []byte
	left  []byte // what is left to write
	errno syscall.Errno
	fn    func(fd uintptr) bool // writeOnce, made once per buffer
}

func (hc *h1conn) borrowReader() {
	if hc.br == nil {
		hc.br = readers.Get().(*bufio.Reader)
		if hc.tin != nil {
			hc.br.Reset(hc.tin)
		} else {
			hc.br.Reset(hc.nc)
		}
	}
}

// returnReader gives the buffer back unless it holds bytes of a later
// answer, which must stay with this connection.
func (hc *h1conn) returnReader() {
	if hc.br != nil && hc.br.Buffered() == 0 {
		hc.br.Reset(nil)
		readers.Put(hc.br)
		hc.br = nil
	}
}

// Close closes every connection.
func (c *H1) Close() {
	for len(c.conns) > 0 {
		c.drop(c.conns[len(c.conns)-1])
	}
}

func (c *H1) drop(hc *h1conn) {
	hc.nc.Close()
	if hc.br != nil {
		hc.br.Reset(nil)
		readers.Put(hc.br)
		hc.br = nil
	}
	for i, x := range c.conns {
		if x == hc {
			c.conns = append(c.conns[:i], c.conns[i+1:]...)
			return
		}
	}
}

func (c *H1) conn(ep *Endpoint, sent, deadline time.Time) (*h1conn, error) {
	for _, hc := range c.conns {
		if hc.ep != ep {
			continue
		}
		// A reuse looks first (one system call) unless the look after the
		// last answer was just now: a connection the server closed, or one
		// holding bytes that arrived after its last answer was read, would
		// otherwise fail this request for a fault that is not this
		// request's.
		looked := hc.lookedAt
		hc.lookedAt = 0
		if hc.peeked == peekIdle && looked != 0 {
			if d := sent.Sub(clockBase) - looked; d >= 0 && d < recheckAfter {
				hc.reused = true
				return hc, nil
			}
		}
		if hc.peek() == peekIdle {
			hc.reused = true
			return hc, nil
		}
		c.drop(hc)
		break
	}
	nc, err := c.dialNew(ep, deadline)
	if err != nil {
		return nil, err
	}
	hc := &h1conn{ep: ep, nc: nc}
	if hc.tc, _ = nc.(*tls.Conn); hc.tc != nil {
		hc.rec, _ = hc.tc.NetConn().(*recConn)
		hc.tin = &tlsIn{tc: hc.tc, rec: hc.rec}
	}
	if hc.rc = rawConnOf(nc); hc.rc != nil {
		hc.peekFn = hc.peekOnce
	}
	c.conns = append(c.conns, hc)
	return hc, nil
}

// dialNew opens a new connection to ep for a request due by deadline,
// which Interrupt cuts off. A TLS handshake that chose h2 is
// errNegotiatedH2.
func (c *H1) dialNew(ep *Endpoint, deadline time.Time) (net.Conn, error) {
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Published before the flag is read, as current is in RoundTrip: an
	// Interrupt in between either finds cancel or is seen here.
	c.stopDial.Store(&cancel)
	defer c.stopDial.Store(nil)
	if c.interrupted.Load() {
		return nil, ErrInterrupted
	}
	nc, proto, err := c.ud.dial(stop, ep, deadline, c.alpn)
	if err != nil {
		if c.interrupted.Load() {
			return nil, ErrInterrupted
		}
		return nil, err
	}
	if proto == "h2" {
		return nil, errNegotiatedH2{nc: nc}
	}
	return nc, nil
}

func (c *H1) limitsOrDefault() (header, body int) {
	header, body = c.MaxHeaderBytes, c.MaxKeptBody
	if header <= 0 {
		header = DefaultMaxHeaderBytes
	}
	if body <= 0 {
		body = DefaultMaxKeptBody
	}
	return header, body
}

// RoundTrip sends req and reads the answer into resp. Any error leaves the
// connection closed, so the next request starts clean.
func (c *H1) RoundTrip(req *Request, resp *Response) error {
	if c.interrupted.Load() {
		return ErrInterrupted
	}
	sent := req.Sent
	if sent.IsZero() {
		sent = time.Now()
	}
	deadline := sent.Add(req.Timeout)
	hc, err := c.conn(req.Endpoint, sent, deadline)
	if err != nil {
		return err
	}
	err = c.exchange(hc, req, resp, deadline)
	if hc.tc != nil {
		if err != nil {
			return c.ud.sh.cw.blame(req.Endpoint.Addr, err)
		}
		c.ud.sh.cw.answered(req.Endpoint.Addr)
	}
	return err
}

// exchange sends req on hc and reads its answer.
func (c *H1) exchange(hc *h1conn, req *Request, resp *Response, deadline time.Time) error {
	// The deadline is set before the connection is published and the
	// flag read after: an Interrupt in between then either sees this
	// connection and cuts it after this deadline was set, or is seen here.
	if err := hc.nc.SetDeadline(deadline); err != nil {
		c.drop(hc)
		return err
	}
	c.current.Store(hc)
	defer c.current.Store(nil)
	if c.interrupted.Load() {
		c.drop(hc)
		return ErrInterrupted
	}
	ob := writers.Get().(*outBuf)
	ob.b = appendHead(ob.b[:0], req)
	// A small body goes in the head's write; a big one is written from
	// where it is, so no pooled buffer grows to its size and stays so.
	big := len(req.Body) > separateBodyOver
	if !big {
		ob.b = append(ob.b, req.Body...)
	}
	err := hc.write(ob, ob.b)
	if err == nil && big {
		err = hc.write(ob, req.Body)
	}
	writers.Put(ob)
	if err != nil {
		c.drop(hc)
		return err
	}
	hc.borrowReader()
	maxHeader, maxKept := c.limitsOrDefault()
	closeAfter, err := readResponse(hc.br, req, resp, maxHeader, maxKept)
	if err != nil {
		if hc.reused && errors.Is(err, io.EOF) {
			err = ErrServerClosed
		}
		c.drop(hc)
		return err
	}
	// A kept connection must carry no deadline: a passed one (this
	// request's, once the user has thought longer than its timeout) makes
	// every look at the socket fail at once, so the next reuse would take
	// a live connection for a closed one and dial anew.
	hc.nc.SetDeadline(time.Time{})
	// Bytes after a complete answer mean its framing was wrong (a
	// Content-Length shorter than the body, a body after a 204): this
	// answer is the one that fails, and its connection goes, so the stray
	// bytes are never read as the next request's answer.
	if hc.br.Buffered() > 0 || !closeAfter && !c.NewConnPerRequest && hc.peek() == peekData {
		c.drop(hc)
		return errTrailing
	}
	if closeAfter || c.NewConnPerRequest || hc.peeked == peekClosed {
		c.drop(hc)
		return nil
	}
	if hc.peeked == peekIdle && hc.rc != nil {
		hc.lookedAt = max(time.Since(clockBase), 1)
	}
	hc.returnReader()
	return nil
}

// write writes p whole, through ob's writeOnce where it can.
func (hc *h1conn) write(ob *outBuf, p []byte) error {
	if !rawWrite || hc.rc == nil || hc.tc != nil {
		_, err := hc.nc.Write(p)
		return err
	}
	ob.left, ob.errno = p, 0
	err := hc.rc.Write(ob.fn)
	ob.left = nil
	if oe, ok := err.(*net.OpError); ok && oe.Op == "raw-write" {
		// A deadline that fires during the raw write: say "write", as a
		// plain Write (and the event-loop engine) says for the same end.
		oe.Op = "write"
	}
	if err == nil && ob.errno != 0 {
		err = &net.OpError{Op: "write", Net: "tcp", Source: hc.nc.LocalAddr(), Addr: hc.nc.RemoteAddr(), Err: os.NewSyscallError("write", ob.errno)}
	}
	return err
}

// separateBodyOver is the request body size above which the body is
// written on its own.
const separateBodyOver = 16 << 10

// appendHead appends the request line and headers, up to the blank line.
func appendHead(b []byte, req *Request) []byte {
	b = append(b, req.Method...)
	b = append(b, ' ')
	if len(req.PathQuery) == 0 {
		b = append(b, '/')
	}
	b = append(b, req.PathQuery...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, req.Endpoint.Host...)
	b = append(b, "\r\n"...)
	for _, f := range req.Header {
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	if len(req.Body) > 0 || bodyMethod(req.Method) {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

func bodyMethod(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

var errMalformed = errors.New("malformed HTTP response")

var (
	errTrailing   = fmt.Errorf("%w: bytes follow the end of the answer (a Content-Length shorter than the body, or a body where none belongs); connection closed", errMalformed)
	errUnasked101 = fmt.Errorf("%w: 101 Switching Protocols to a request that asked for no upgrade; connection closed", errMalformed)
)

// headerTooBig is the error of an answer whose header block passed the cap.
func headerTooBig(max int) error {
	return fmt.Errorf("%w: response header block longer than %d bytes (http.max_header_bytes); connection closed", errMalformed, max)
}

// readResponse parses one answer. It reports whether the server asked to
// close the connection (or gave no length, so the body ran to EOF).
// maxHeader bounds the header block (interim answers included) and
// maxKept the body bytes kept when req.KeepBody.
func readResponse(br *bufio.Reader, req *Request, resp *Response, maxHeader, maxKept int) (closeAfter bool, err error) {
	resp.takeHeaderBufs()
	resp.Body = resp.Body[:0]
	resp.BodyLen = 0
	keep := req.KeepHead
	if req.KeepBody {
		keep = max(maxKept, keep)
	}
	budget := maxHeader
	for {
		line, err := headerLine(br, resp, &budget, maxHeader)
		if err != nil {
			return true, err
		}
		major, minor, status, ok := parseStatusLine(line)
		if !ok {
			return true, fmt.Errorf("%w: bad status line %q", errMalformed, clip(line))
		}
		if err := checkStatus(status); err != nil {
			return true, err
		}
		resp.Status = status
		keepAlive := major == 1 && minor >= 1
		var contentLength int64 = -1
		// te: a Transfer-Encoding was given; chunked: its final coding is
		// chunked (RFC 9112 section 6.3).
		te, chunked := false, false
		resp.Header = resp.Header[:0]
		resp.hbuf = resp.hbuf[:0]
		for {
			line, err := headerLine(br, resp, &budget, maxHeader)
			if err != nil {
				return true, err
			}
			if len(line) == 0 {
				break
			}
			colon := bytes.IndexByte(line, ':')
			if colon <= 0 {
				return true, fmt.Errorf("%w: bad header line %q", errMalformed, clip(line))
			}
			name := line[:colon]
			value := bytes.TrimSpace(line[colon+1:])
			switch {
			case equalFold(name, "Content-Length"):
				n, ok := parseDecimal(value)
				if !ok {
					return true, fmt.Errorf("%w: bad Content-Length %q", errMalformed, clip(value))
				}
				if contentLength, err = sameContentLength(contentLength, n); err != nil {
					return true, err
				}
			case equalFold(name, "Transfer-Encoding"):
				te, chunked = true, finalCodingChunked(value)
			case equalFold(name, "Connection"):
				if containsFold(value, "close") {
					keepAlive = false
				} else if containsFold(value, "keep-alive") {
					keepAlive = true
				}
			}
			// Header values are copied: the reader's buffer moves on.
			start := len(resp.hbuf)
			resp.hbuf = append(resp.hbuf, name...)
			mid := len(resp.hbuf)
			resp.hbuf = append(resp.hbuf, value...)
			resp.Header = append(resp.Header, Field{Name: resp.hbuf[start:mid:mid], Value: resp.hbuf[mid:len(resp.hbuf):len(resp.hbuf)]})
		}
		if status >= 100 && status < 200 && status != 101 {
			// Interim answers (100 Continue, 103 Early Hints) precede the
			// real one on the same connection.
			continue
		}
		switch {
		case status == 101:
			// The connection now speaks another protocol, which this
			// client does not: it cannot carry another request. Unasked,
			// the server broke the exchange.
			if !asksUpgrade(req) {
				return true, errUnasked101
			}
			return true, nil
		case req.Method == "HEAD" || status == 204 || status == 304:
			return !keepAlive, nil
		case chunked:
			err = readChunked(br, keep, maxHeader, resp)
			return !keepAlive || err != nil, err
		case te:
			// A coding other than chunked last: only the close ends the
			// body, and Transfer-Encoding overrides any Content-Length.
			err = readBody(br, -1, keep, resp)
			return true, err
		case contentLength >= 0:
			err = readBody(br, contentLength, keep, resp)
			return !keepAlive || err != nil, err
		default:
			// No length: the body ends when the server closes.
			err = readBody(br, -1, keep, resp)
			return true, err
		}
	}
}

// checkStatus refuses a status code below 100 (000 to 099): no such
// answer exists, and counting it as a success hid a broken server.
func checkStatus(status int) error {
	if why := statusProblem(status); why != "" {
		return fmt.Errorf("%w: %s", errMalformed, why)
	}
	return nil
}

// statusProblem is what is wrong with a status code ("" when nothing):
// one rule, in one wording, for HTTP/1.1 and HTTP/2 (h2headers.go).
func statusProblem(status int) string {
	if status < 100 {
		return fmt.Sprintf("status %03d is not an HTTP status", status)
	}
	return ""
}

// sameContentLength takes a Content-Length line given after prev (-1:
// none yet): repeating the same length is allowed, a different one makes
// the body's end unknowable (RFC 9112 section 6.3), so the answer is
// malformed rather than read by whichever line came last.
func sameContentLength(prev, n int64) (int64, error) {
	if prev >= 0 && prev != n {
		return prev, fmt.Errorf("%w: conflicting Content-Length values %d and %d", errMalformed, prev, n)
	}
	return n, nil
}

// finalCodingChunked reports whether the last coding of a
// Transfer-Encoding value is chunked ("gzip, chunked" is, "chunked, gzip"
// is not: that body runs until the close).
func finalCodingChunked(v []byte) bool {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	v = bytes.TrimSpace(v)
	if i := bytes.IndexByte(v, ';'); i >= 0 {
		v = bytes.TrimSpace(v[:i])
	}
	return equalFold(v, "chunked")
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func asksUpgrade(req *Request) bool {
	for _, f := range req.Header {
		if equalFold(f.Name, "Upgrade") {
			return true
		}
	}
	return false
}

// headerLine reads one line of a header block and charges it to *budget. A
// line longer than the reader's buffer (a big cookie) is gathered in
// resp.lbuf; neither it nor the block may pass the budget, so a server that
// sends header bytes forever fails its request in bounded memory.
func headerLine(br *bufio.Reader, resp *Response, budget *int, max int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		resp.lbuf = append(resp.lbuf[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(resp.lbuf) > *budget {
				return nil, headerTooBig(max)
			}
			line, err = br.ReadSlice('\n')
			resp.lbuf = append(resp.lbuf, line...)
		}
		line = resp.lbuf
	}
	*budget -= len(line)
	if *budget < 0 {
		return nil, headerTooBig(max)
	}
	return endOfLine(line, err)
}

// endOfLine strips a line's CRLF or LF ending, or turns a line cut short by
// the end of the stream into io.ErrUnexpectedEOF.
func endOfLine(line []byte, err error) ([]byte, error) {
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readLine returns one CRLF- or LF-terminated line without its ending. The
// slice points into the reader's buffer.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: header line longer than %d bytes", errMalformed, br.Size())
	}
	return endOfLine(line, err)
}

func parseStatusLine(line []byte) (major, minor, status int, ok bool) {
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/")) || line[6] != '.' || line[8] != ' ' {
		return 0, 0, 0, false
	}
	major, minor = int(line[5]-'0'), int(line[7]-'0')
	if major < 0 || major > 9 || minor < 0 || minor > 9 {
		return 0, 0, 0, false
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, 0, 0, false
		}
		status = status*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' {
		return 0, 0, 0, false
	}
	return major, minor, status, true
}

// readBody reads n bytes (n < 0: until EOF), keeping the body's first keep
// bytes.
func readBody(br *bufio.Reader, n int64, keep int, resp *Response) error {
	for n != 0 {
		chunk, err := br.Peek(1)
		if err != nil {
			if n < 0 && errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		avail := br.Buffered()
		if avail == 0 {
			avail = len(chunk)
		}
		take := int64(avail)
		if n > 0 && take > n {
			take = n
		}
		buf, _ := br.Peek(int(take))
		if len(resp.Body) < keep {
			room := keep - len(resp.Body)
			if len(buf) < room {
				room = len(buf)
			}
			resp.Body = append(resp.Body, buf[:room]...)
		}
		resp.BodyLen += take
		br.Discard(int(take))
		if n > 0 {
			n -= take
		}
	}
	return nil
}

// readChunked reads a chunked body; its trailers share the header cap.
func readChunked(br *bufio.Reader, keep, maxHeader int, resp *Response) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return unexpected(err)
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimSpace(line)
		size, ok := parseHex(line)
		if !ok {
			return fmt.Errorf("%w: bad chunk size %q", errMalformed, clip(line))
		}
		if size == 0 {
			// Trailers, then the empty line that ends the message.
			budget := maxHeader
			for {
				t, err := headerLine(br, resp, &budget, maxHeader)
				if err != nil {
					return unexpected(err)
				}
				if len(t) == 0 {
					return nil
				}
			}
		}
		if err := readBody(br, size, keep, resp); err != nil {
			return err
		}
		crlf, err := readLine(br)
		if err != nil {
			return unexpected(err)
		}
		if len(crlf) != 0 {
			return fmt.Errorf("%w: chunk not followed by CRLF", errMalformed)
		}
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseDecimal and parseHex read header numbers without the allocation
// strconv needs for a []byte argument.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}

// containsFold reports whether lower-case word occurs in b, ignoring case.
func containsFold(b []byte, word string) bool {
	for i := 0; i+len(word) <= len(b); i++ {
		if equalFold(b[i:i+len(word)], word) {
			return true
		}
	}
	return false
}
