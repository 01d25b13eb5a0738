package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// The HTTP/1.1 answer parser, one for both engines: RoundTrip reads
// through it from the connection, the event loop from the bytes it read
// (Parser, Stream).

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
		h, err := readHead(br, resp, &budget, maxHeader)
		if err != nil {
			return true, err
		}
		if h.status >= 100 && h.status < 200 && h.status != 101 {
			// Interim answers (100 Continue, 103 Early Hints) precede the
			// real one on the same connection.
			continue
		}
		return readAnswerBody(br, req, resp, h, keep, maxHeader)
	}
}

// answerHead is what an answer's head says of its body and connection.
type answerHead struct {
	status    int
	keepAlive bool
	// contentLength is -1 when none was given; te: a Transfer-Encoding
	// was given, chunked: its final coding is chunked (RFC 9112 section
	// 6.3).
	contentLength int64
	te, chunked   bool
}

// readHead reads an answer's status line and header block into resp,
// charging them to *budget.
func readHead(br *bufio.Reader, resp *Response, budget *int, maxHeader int) (answerHead, error) {
	h := answerHead{contentLength: -1}
	line, err := headerLine(br, resp, budget, maxHeader)
	if err != nil {
		return h, err
	}
	major, minor, status, ok := parseStatusLine(line)
	if !ok {
		return h, fmt.Errorf("%w: bad status line %q", errMalformed, clip(line))
	}
	if err := checkStatus(status); err != nil {
		return h, err
	}
	resp.Status = status
	h.status, h.keepAlive = status, major == 1 && minor >= 1
	resp.Header = resp.Header[:0]
	resp.hbuf = resp.hbuf[:0]
	for {
		line, err := headerLine(br, resp, budget, maxHeader)
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			return h, nil
		}
		if err := h.field(line, resp); err != nil {
			return h, err
		}
	}
}

// field takes one header line: the framing it says, and a copy in resp
// (the reader's buffer moves on).
func (h *answerHead) field(line []byte, resp *Response) error {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return fmt.Errorf("%w: bad header line %q", errMalformed, clip(line))
	}
	name := line[:colon]
	value := bytes.TrimSpace(line[colon+1:])
	switch {
	case equalFold(name, "Content-Length"):
		n, ok := parseDecimal(value)
		if !ok {
			return fmt.Errorf("%w: bad Content-Length %q", errMalformed, clip(value))
		}
		var err error
		if h.contentLength, err = sameContentLength(h.contentLength, n); err != nil {
			return err
		}
	case equalFold(name, "Transfer-Encoding"):
		h.te, h.chunked = true, finalCodingChunked(value)
	case equalFold(name, "Connection"):
		if containsFold(value, "close") {
			h.keepAlive = false
		} else if containsFold(value, "keep-alive") {
			h.keepAlive = true
		}
	}
	start := len(resp.hbuf)
	resp.hbuf = append(resp.hbuf, name...)
	mid := len(resp.hbuf)
	resp.hbuf = append(resp.hbuf, value...)
	resp.Header = append(resp.Header, Field{Name: resp.hbuf[start:mid:mid], Value: resp.hbuf[mid:len(resp.hbuf):len(resp.hbuf)]})
	return nil
}

// readAnswerBody reads the body the head announced (RFC 9112 section 6.3)
// and says whether the connection must close after it.
func readAnswerBody(br *bufio.Reader, req *Request, resp *Response, h answerHead, keep, maxHeader int) (bool, error) {
	var err error
	switch {
	case h.status == 101:
		// The connection now speaks another protocol, which this client
		// does not: it cannot carry another request. Unasked, the server
		// broke the exchange.
		if !asksUpgrade(req) {
			return true, errUnasked101
		}
		return true, nil
	case req.Method == "HEAD" || h.status == 204 || h.status == 304:
		return !h.keepAlive, nil
	case h.chunked:
		err = readChunked(br, keep, maxHeader, resp)
		return !h.keepAlive || err != nil, err
	case h.te:
		// A coding other than chunked last: only the close ends the body,
		// and Transfer-Encoding overrides any Content-Length.
		return true, readBody(br, -1, keep, resp)
	case h.contentLength >= 0:
		err = readBody(br, h.contentLength, keep, resp)
		return !h.keepAlive || err != nil, err
	default:
		// No length: the body ends when the server closes.
		return true, readBody(br, -1, keep, resp)
	}
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

// readChunkLine returns one CRLF- or LF-terminated line of a chunked
// body (a chunk's size with its extensions, or the CRLF after its data)
// without its ending. The slice points into the reader's buffer, which
// bounds the line, as Go's own client bounds it (4096 bytes).
func readChunkLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: chunk size line (with its extensions) longer than %d bytes", errMalformed, br.Size())
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
		// take is at most what is buffered: the discard cannot fail.
		_, _ = br.Discard(int(take))
		if n > 0 {
			n -= take
		}
	}
	return nil
}

// readChunked reads a chunked body; its trailers share the header cap.
func readChunked(br *bufio.Reader, keep, maxHeader int, resp *Response) error {
	for {
		line, err := readChunkLine(br)
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
		crlf, err := readChunkLine(br)
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
