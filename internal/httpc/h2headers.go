package httpc

import (
	"fmt"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2block is the header block being decoded on a connection. Blocks of
// closed streams and trailers must be decoded too, for HPACK's table, but
// their fields are not kept.
type h2block struct {
	discard   bool
	trailers  bool
	endStream bool
	bytes     int // encoded bytes (HEADERS and CONTINUATION payloads)
	list      int // decoded size as RFC 9113 counts it (name+value+32 each)
	tooBig    bool
	status    int
	hasStatus bool   // :status was seen ("000" leaves status 0)
	regular   bool   // a regular field was seen (pseudo fields must come first)
	bad       string // why the block is malformed ("" when it is not)
}

// onHeaderBlock takes a HEADERS (first) or CONTINUATION fragment. The
// framer has checked that CONTINUATION follows on the same stream.
func (c *h2conn) onHeaderBlock(id uint32, frag []byte, ended, endStream, first bool) error {
	if first {
		if err := c.startBlock(id, endStream); err != nil {
			return err
		}
	} else if len(frag) == 0 && !ended {
		if err := c.strike("empty CONTINUATION"); err != nil {
			return err
		}
	}
	b := &c.blk
	b.bytes += len(frag)
	if b.bytes > c.maxHeader {
		return headerTooBig(c.maxHeader)
	}
	if _, err := c.dec.Write(frag); err != nil {
		return c.hpackError(err)
	}
	if b.tooBig {
		return headerTooBig(c.maxHeader)
	}
	if !ended {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return c.hpackError(err)
	}
	return c.endBlock(id)
}

func (c *h2conn) hpackError(err error) error {
	if c.blk.tooBig || err == hpack.ErrStringLength {
		return headerTooBig(c.maxHeader)
	}
	return h2Violation(http2.ErrCodeCompression, "bad HPACK header block: %v", err)
}

func (c *h2conn) startBlock(id uint32, endStream bool) error {
	c.blk = h2block{endStream: endStream}
	c.dec.SetEmitEnabled(true)
	st := c.active(id)
	c.blkSt, c.blkID = st, id
	switch {
	case st == nil && !c.opened(id):
		return h2Violation(http2.ErrCodeProtocol, "HEADERS on stream %d, which we never opened", id)
	case st == nil:
		c.blk.discard = true
	case st.final:
		if !endStream {
			return h2Violation(http2.ErrCodeProtocol, "a second header block on stream %d without END_STREAM", id)
		}
		// Trailers count against the header cap and are dropped, as
		// HTTP/1.1's are.
		c.blk.discard, c.blk.trailers = true, true
	default:
		st.resp.Header = st.resp.Header[:0]
		st.resp.hbuf = st.resp.hbuf[:0]
		st.contentLength = -1
	}
	return nil
}

// emit takes one decoded field. Its size is charged before anything is
// kept, so an HPACK bomb (a big entry referenced over and over) stops at
// the cap whatever the block's encoded size.
func (c *h2conn) emit(f hpack.HeaderField) {
	b := &c.blk
	b.list += len(f.Name) + len(f.Value) + 32
	if b.list > c.maxHeader {
		b.tooBig = true
		c.dec.SetEmitEnabled(false)
		return
	}
	if b.discard || b.bad != "" {
		return
	}
	if strings.HasPrefix(f.Name, ":") {
		if b.regular || f.Name != ":status" || b.hasStatus {
			b.bad = "unexpected " + f.Name
			return
		}
		if len(f.Value) != 3 {
			b.bad = ":status " + f.Value
			return
		}
		for i := 0; i < 3; i++ {
			d := f.Value[i]
			if d < '0' || d > '9' {
				b.bad = ":status " + f.Value
				return
			}
			b.status = b.status*10 + int(d-'0')
		}
		b.hasStatus = true
		return
	}
	b.regular = true
	st := c.blkSt
	if st == nil || c.active(c.blkID) != st {
		// Its user gave up (a timeout) while the block was decoded, and
		// may have started another request on the same h2stream: on
		// another connection that can have the same stream id (ids
		// restart at 1 on each), so the id proves nothing. Only a stream
		// still in this connection's table is still ours, and looking it
		// up reads none of the h2stream's fields, which that other
		// connection's lock guards.
		return
	}
	if f.Name == "content-length" {
		n, ok := parseDecimal([]byte(f.Value))
		if !ok {
			b.bad = "content-length " + f.Value
			return
		}
		// As over HTTP/1.1 (h1.go): a repeat must agree, or which one
		// ends the body is anyone's guess.
		if _, err := sameContentLength(st.contentLength, n); err != nil {
			b.bad = fmt.Sprintf("conflicting content-length values %d and %d", st.contentLength, n)
			return
		}
		st.contentLength = n
	}
	r := st.resp
	start := len(r.hbuf)
	r.hbuf = append(r.hbuf, f.Name...)
	mid := len(r.hbuf)
	r.hbuf = append(r.hbuf, f.Value...)
	r.Header = append(r.Header, Field{Name: r.hbuf[start:mid:mid], Value: r.hbuf[mid:len(r.hbuf):len(r.hbuf)]})
}

func (c *h2conn) endBlock(id uint32) error {
	b := &c.blk
	if b.bad != "" {
		return h2Violation(http2.ErrCodeProtocol, "malformed header block on stream %d: %s", id, b.bad)
	}
	st := c.active(id)
	if st == nil && !b.discard {
		// Shared mode: its user gave up while the block was decoded.
		return nil
	}
	if b.discard {
		if b.trailers && st != nil {
			c.strikes = 0
			c.finish(st, st.lengthError())
			return nil
		}
		return c.strike("HEADERS of a closed stream")
	}
	c.strikes = 0
	switch {
	case !b.hasStatus:
		return h2Violation(http2.ErrCodeProtocol, "a response header block without :status on stream %d", id)
	case statusProblem(b.status) != "":
		// As over HTTP/1.1 (checkStatus): not an interim answer to wait
		// past, but no HTTP status at all.
		return h2Violation(http2.ErrCodeProtocol, "malformed header block on stream %d: %s", id, statusProblem(b.status))
	case b.status == 101:
		return h2Violation(http2.ErrCodeProtocol, "101 Switching Protocols on stream %d (not allowed in HTTP/2)", id)
	case b.status < 200:
		// An interim answer (100, 103): the real one follows.
		if b.endStream {
			return h2Violation(http2.ErrCodeProtocol, "an interim %d answer ended stream %d", b.status, id)
		}
		return nil
	}
	st.final = true
	st.resp.Status = b.status
	if b.endStream {
		c.finish(st, st.lengthError())
	}
	return nil
}

// lengthError checks a finished body against its content-length.
func (st *h2stream) lengthError() error {
	r := st.resp
	if st.contentLength < 0 || st.req.Method == "HEAD" || r.Status == 204 || r.Status == 304 || r.BodyLen == st.contentLength {
		return nil
	}
	return fmt.Errorf("%w: content-length %d but stream %d carried %d bytes", errMalformed, st.contentLength, st.id, r.BodyLen)
}

// encodeRequest writes req's header block into c.encBuf.
func (c *h2conn) encodeRequest(req *Request) {
	c.encBuf.Reset()
	authority := req.Endpoint.Host
	for _, f := range req.Header {
		if equalFold(f.Name, "host") {
			authority = c.intern(f.Value, false)
		}
	}
	path := "/"
	if len(req.PathQuery) > 0 {
		path = c.intern(req.PathQuery, false)
	}
	c.field(":method", req.Method)
	c.field(":scheme", req.Endpoint.Scheme)
	c.field(":authority", authority)
	c.field(":path", path)
	for _, f := range req.Header {
		if connectionSpecific(f) {
			continue
		}
		c.field(c.intern(f.Name, true), c.intern(f.Value, false))
	}
	if len(req.Body) > 0 || bodyMethod(req.Method) {
		c.field("content-length", c.lengthText(len(req.Body)))
	}
}

func (c *h2conn) field(name, value string) {
	// The encoder writes to a bytes.Buffer, which cannot fail.
	_ = c.enc.WriteField(hpack.HeaderField{Name: name, Value: value})
}

// connectionSpecific reports the fields HTTP/2 forbids (RFC 9113 section
// 8.2.2), the Host that became :authority, and a content-length we write.
func connectionSpecific(f Field) bool {
	for _, n := range [...]string{"connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length"} {
		if equalFold(f.Name, n) {
			return true
		}
	}
	return equalFold(f.Name, "te") && !equalFold(f.Value, "trailers")
}

// Bounds of the strings a connection interns.
const (
	maxInterned    = 128
	maxInternedLen = 512
)

// intern returns b as a string, lower-cased when lower, converting it only
// the first time: a user's requests repeat their header names and values.
func (c *h2conn) intern(b []byte, lower bool) string {
	if lower && hasUpper(b) {
		c.lowerBuf = append(c.lowerBuf[:0], b...)
		for i, x := range c.lowerBuf {
			c.lowerBuf[i] = lowerByte(x)
		}
		b = c.lowerBuf
	}
	if s, ok := c.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.interned) < maxInterned && len(b) <= maxInternedLen {
		c.interned[s] = s
	}
	return s
}

func hasUpper(b []byte) bool {
	for _, x := range b {
		if 'A' <= x && x <= 'Z' {
			return true
		}
	}
	return false
}

func lowerByte(x byte) byte { return lower(x) }

// lengthText formats a body length, reusing the last one's string.
func (c *h2conn) lengthText(n int) string {
	if n != c.lastLen || c.lastLenText == "" {
		c.lastLen, c.lastLenText = n, fmt.Sprint(n)
	}
	return c.lastLenText
}
