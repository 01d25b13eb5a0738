package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
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
	dialer            net.Dialer
	limits            *hostLimits

	// current is the connection a request is using right now, so Interrupt
	// (called from another goroutine) can cut it off.
	current     atomic.Pointer[h1conn]
	interrupted atomic.Bool
}

// ErrInterrupted is returned for requests cut off by Interrupt.
var ErrInterrupted = errors.New("request interrupted at the end of the run")

// Interrupt cuts off the request in flight, if any, and makes every later
// request fail at once. It may be called from any goroutine.
func (c *H1) Interrupt() {
	c.interrupted.Store(true)
	if hc := c.current.Load(); hc != nil {
		hc.nc.SetDeadline(time.Unix(1, 0))
	}
}

type h1conn struct {
	ep *Endpoint
	nc net.Conn
	// br is borrowed from readers only while an answer is being read: an
	// idle connection holds no buffer, which is most of the memory of a
	// user that spends its time thinking.
	br       *bufio.Reader
	lastUsed time.Time
	reused   bool
}

// NewH1 returns an empty client.
func NewH1() *H1 { return &H1{} }

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}
)

func (hc *h1conn) borrowReader() {
	if hc.br == nil {
		hc.br = readers.Get().(*bufio.Reader)
		hc.br.Reset(hc.nc)
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

// idleCheckAfter is how long a connection may sit idle before we make sure
// the server has not closed it. A hot connection skips the check, which
// costs two system calls; an idle one would otherwise fail its next request
// for a reason that is ours, not the server's.
const idleCheckAfter = time.Second

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
	if c.limits != nil {
		c.limits.release(hc.ep.Addr)
	}
	for i, x := range c.conns {
		if x == hc {
			c.conns = append(c.conns[:i], c.conns[i+1:]...)
			return
		}
	}
}

func (c *H1) conn(ep *Endpoint, now, deadline time.Time) (*h1conn, error) {
	for _, hc := range c.conns {
		if hc.ep != ep {
			continue
		}
		if now.Sub(hc.lastUsed) < idleCheckAfter || alive(hc) {
			hc.reused = true
			return hc, nil
		}
		c.drop(hc)
		break
	}
	if c.limits != nil {
		if err := c.limits.acquire(ep.Addr, deadline); err != nil {
			return nil, err
		}
	}
	d := c.dialer
	d.Deadline = deadline
	nc, err := d.Dial("tcp", ep.Addr)
	if err != nil {
		if c.limits != nil {
			c.limits.release(ep.Addr)
		}
		return nil, err
	}
	hc := &h1conn{ep: ep, nc: nc}
	c.conns = append(c.conns, hc)
	return hc, nil
}

// alive reports whether an idle connection is still open: a non-blocking
// peek finds nothing waiting (no EOF, no stray bytes). Go's own read with a
// past deadline would not look at the socket at all.
func alive(hc *h1conn) bool {
	if hc.br != nil && hc.br.Buffered() > 0 {
		return false
	}
	sc, ok := hc.nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var one [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
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
	c.current.Store(hc)
	defer c.current.Store(nil)
	if c.interrupted.Load() {
		c.drop(hc)
		return ErrInterrupted
	}
	if err := hc.nc.SetDeadline(deadline); err != nil {
		c.drop(hc)
		return err
	}
	wb := writers.Get().(*[]byte)
	*wb = appendRequest((*wb)[:0], req)
	_, err = hc.nc.Write(*wb)
	writers.Put(wb)
	if err != nil {
		c.drop(hc)
		return err
	}
	hc.borrowReader()
	closeAfter, err := readResponse(hc.br, req, resp)
	if err != nil {
		if hc.reused && errors.Is(err, io.EOF) {
			err = ErrServerClosed
		}
		c.drop(hc)
		return err
	}
	if closeAfter || c.NewConnPerRequest {
		c.drop(hc)
		return nil
	}
	hc.returnReader()
	// Idle time counts from the send: close enough for the idle check, and
	// one clock read cheaper.
	hc.lastUsed = sent
	return nil
}

func appendRequest(b []byte, req *Request) []byte {
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
	b = append(b, "\r\n"...)
	return append(b, req.Body...)
}

func bodyMethod(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

var errMalformed = errors.New("malformed HTTP response")

// readResponse parses one answer. It reports whether the server asked to
// close the connection (or gave no length, so the body ran to EOF).
func readResponse(br *bufio.Reader, req *Request, resp *Response) (closeAfter bool, err error) {
	resp.Header = resp.Header[:0]
	resp.hbuf = resp.hbuf[:0]
	resp.Body = resp.Body[:0]
	resp.BodyLen = 0
	for {
		line, err := readLine(br)
		if err != nil {
			return true, err
		}
		major, minor, status, ok := parseStatusLine(line)
		if !ok {
			return true, fmt.Errorf("%w: bad status line %q", errMalformed, clip(line))
		}
		resp.Status = status
		keepAlive := major == 1 && minor >= 1
		var contentLength int64 = -1
		chunked := false
		resp.Header = resp.Header[:0]
		resp.hbuf = resp.hbuf[:0]
		for {
			line, err := readLine(br)
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
				contentLength = n
			case equalFold(name, "Transfer-Encoding"):
				chunked = containsFold(value, "chunked")
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
		case req.Method == "HEAD" || status == 204 || status == 304 || status == 101:
			return !keepAlive, nil
		case chunked:
			err = readChunked(br, req.KeepBody, resp)
			return !keepAlive || err != nil, err
		case contentLength >= 0:
			err = readBody(br, contentLength, req.KeepBody, resp)
			return !keepAlive || err != nil, err
		default:
			// No length: the body ends when the server closes.
			err = readBody(br, -1, req.KeepBody, resp)
			return true, err
		}
	}
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// readLine returns one CRLF- or LF-terminated line without its ending. The
// slice points into the reader's buffer.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: header line longer than %d bytes", errMalformed, br.Size())
		}
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

// readBody reads n bytes (n < 0: until EOF), keeping up to MaxKeptBody.
func readBody(br *bufio.Reader, n int64, keep bool, resp *Response) error {
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
		if keep && len(resp.Body) < MaxKeptBody {
			room := MaxKeptBody - len(resp.Body)
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

func readChunked(br *bufio.Reader, keep bool, resp *Response) error {
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
			for {
				t, err := readLine(br)
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
