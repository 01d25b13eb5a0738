package httpc

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
)

// h2stream is the exchange in flight on a connection: one request and the
// answer it is reading. A user reuses one for all its requests.
type h2stream struct {
	id   uint32
	req  *Request
	resp *Response
	keep int

	sendWindow  int64
	recvAvail   int64
	recvUnacked int64

	final bool  // the final (non-1xx) header block has been read
	done  bool  // the answer is complete or failed
	err   error // why it failed (nil: it succeeded)

	// contentLength is the answer's content-length (-1: none).
	contentLength int64
	// unsent is how many request body bytes wait for the server's window.
	unsent int
	// wake is signalled when the stream ends (shared mode).
	wake chan struct{}
}

func (st *h2stream) bodyLeft() bool { return st.unsent > 0 }

func (st *h2stream) reset(id uint32, req *Request, resp *Response, keep int, sendWindow int64) {
	*st = h2stream{id: id, req: req, resp: resp, keep: keep, sendWindow: sendWindow, recvAvail: h2StreamWindow, contentLength: -1}
}

// finish ends st with err (nil: success). In shared mode the stream
// leaves the connection's table and its user is woken.
func (c *h2conn) finish(st *h2stream, err error) {
	if st.done {
		return
	}
	st.done, st.err = true, err
	if c.streams != nil {
		delete(c.streams, st.id)
		c.mux.streamDone(st)
	}
}

// step reads one frame and acts on it. An error is a connection error: the
// connection is closed. The streams' outcomes are in their h2stream.
func (c *h2conn) step() error {
	if err := c.flushIfBlocking(); err != nil {
		return err
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		return c.readError(err)
	}
	return c.handle(f)
}

// handle acts on one frame.
func (c *h2conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.HeadersFrame:
		return c.onHeaderBlock(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), f.StreamEnded(), true)
	case *http2.ContinuationFrame:
		return c.onHeaderBlock(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), false, false)
	case *http2.RSTStreamFrame:
		return c.onReset(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			if err := c.fr.WritePing(true, f.Data); err != nil {
				return err
			}
			c.needFlush = true
		}
		return c.strike("PING")
	case *http2.GoAwayFrame:
		return c.onGoAway(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.PushPromiseFrame:
		return h2Violation(http2.ErrCodeProtocol, "the server sent PUSH_PROMISE though we set SETTINGS_ENABLE_PUSH to 0")
	}
	return c.strike("a frame of type " + f.Header().Type.String())
}

// readError turns the framer's errors into ours; I/O errors stay as they
// are, so a timeout is a timeout and an EOF a closed connection.
func (c *h2conn) readError(err error) error {
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		return h2Violation(http2.ErrCode(ce), "%v", c.fr.ErrorDetail())
	}
	var se http2.StreamError
	if errors.As(err, &se) {
		return h2Violation(se.Code, "stream %d: %v", se.StreamID, se.Cause)
	}
	if errors.Is(err, http2.ErrFrameTooLarge) {
		return h2Violation(http2.ErrCodeFrameSize, "a frame longer than our SETTINGS_MAX_FRAME_SIZE (%d)", h2MaxFrame)
	}
	if c.goaway && c.goawayCode != http2.ErrCodeNo {
		// The server said why before closing.
		return fmt.Errorf("%w (after the server's %s)", err, goAwayText(c.goawayCode, c.goawayText))
	}
	return err
}

// active is the stream in flight with this id, or nil.
func (c *h2conn) active(id uint32) *h2stream {
	if c.streams != nil {
		return c.streams[id]
	}
	if c.st != nil && c.st.id == id && !c.st.done {
		return c.st
	}
	return nil
}

// each calls fn for every stream in flight.
func (c *h2conn) each(fn func(st *h2stream)) {
	if c.streams != nil {
		for _, st := range c.streams {
			fn(st)
		}
		return
	}
	if c.st != nil && !c.st.done {
		fn(c.st)
	}
}

// opened reports whether id is a stream we opened (closed or not): a frame
// for any other stream is a protocol error (RFC 9113 section 5.1).
func (c *h2conn) opened(id uint32) bool { return id != 0 && id%2 == 1 && id < c.nextID }

func (c *h2conn) onData(f *http2.DataFrame) error {
	n := int64(f.Length)
	c.recvAvail -= n
	if c.recvAvail < 0 {
		return h2Violation(http2.ErrCodeFlowControl, "the server sent more DATA than the connection window we granted (%d bytes)", h2ConnWindow)
	}
	c.recvUnacked += n
	if c.recvUnacked >= h2ConnWindow/2 {
		if err := c.fr.WriteWindowUpdate(0, uint32(c.recvUnacked)); err != nil {
			return err
		}
		c.recvAvail += c.recvUnacked
		c.recvUnacked = 0
		c.needFlush = true
	}
	st := c.active(f.StreamID)
	if st == nil {
		if !c.opened(f.StreamID) {
			return h2Violation(http2.ErrCodeProtocol, "DATA on stream %d, which we never opened", f.StreamID)
		}
		return c.strike("DATA of a closed stream")
	}
	if !st.final {
		return h2Violation(http2.ErrCodeProtocol, "DATA on stream %d before its response headers", st.id)
	}
	st.recvAvail -= n
	if st.recvAvail < 0 {
		return h2Violation(http2.ErrCodeFlowControl, "the server sent more DATA on stream %d than the window we granted (%d bytes)", st.id, h2StreamWindow)
	}
	data := f.Data()
	st.resp.BodyLen += int64(len(data))
	if room := st.keep - len(st.resp.Body); room > 0 {
		st.resp.Body = append(st.resp.Body, data[:min(room, len(data))]...)
	}
	if f.StreamEnded() {
		c.strikes = 0
		c.finish(st, st.lengthError())
		return nil
	}
	if len(data) == 0 {
		return c.strike("empty DATA")
	}
	c.strikes = 0
	st.recvUnacked += n
	if st.recvUnacked >= h2StreamWindow/2 {
		if err := c.fr.WriteWindowUpdate(st.id, uint32(st.recvUnacked)); err != nil {
			return err
		}
		st.recvAvail += st.recvUnacked
		st.recvUnacked = 0
		c.needFlush = true
	}
	return nil
}

func (c *h2conn) onReset(f *http2.RSTStreamFrame) error {
	st := c.active(f.StreamID)
	if st == nil {
		if !c.opened(f.StreamID) {
			return h2Violation(http2.ErrCodeProtocol, "RST_STREAM on stream %d, which we never opened", f.StreamID)
		}
		return c.strike("RST_STREAM of a closed stream")
	}
	c.strikes = 0
	// Even NO_ERROR cuts the answer here: a complete one has ended the
	// stream already.
	if f.ErrCode == http2.ErrCodeRefusedStream {
		c.finish(st, refusedStream())
	} else {
		c.finish(st, streamReset(f.ErrCode))
	}
	return nil
}

func (c *h2conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return c.strike("SETTINGS ack")
	}
	c.gotSettings = true
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			var ce http2.ConnectionError
			errors.As(err, &ce)
			return h2Violation(http2.ErrCode(ce), "bad setting %v", s)
		}
		switch s.ID {
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = s.Val
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.peerInitWindow
			c.peerInitWindow = int64(s.Val)
			var over bool
			c.each(func(st *h2stream) {
				st.sendWindow += delta
				over = over || st.sendWindow > h2MaxStreamID
			})
			if over {
				return h2Violation(http2.ErrCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream's window")
			}
			if delta > 0 {
				// Shared mode: a body waiting for its stream's window
				// waits on winCh, which only a window change closes.
				c.windowMoved()
			}
		case http2.SettingMaxConcurrentStreams:
			c.peerMaxStreams = s.Val
		case http2.SettingHeaderTableSize:
			c.enc.SetMaxDynamicTableSize(min(s.Val, 4096))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := c.fr.WriteSettingsAck(); err != nil {
		return err
	}
	c.needFlush = true
	return c.strike("SETTINGS")
}

func (c *h2conn) onGoAway(f *http2.GoAwayFrame) error {
	if c.goaway && f.LastStreamID > c.goawayLast {
		return h2Violation(http2.ErrCodeProtocol, "a second GOAWAY raised the last stream from %d to %d", c.goawayLast, f.LastStreamID)
	}
	c.goaway, c.goawayLast, c.goawayCode = true, f.LastStreamID, f.ErrCode
	c.goawayText = clipDebug(f.DebugData())
	c.each(func(st *h2stream) {
		if st.id > f.LastStreamID {
			c.finish(st, refusedByGoAway(f.ErrCode, c.goawayText))
		}
	})
	return c.strike("GOAWAY")
}

func (c *h2conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		if inc == 0 {
			return h2Violation(http2.ErrCodeProtocol, "a connection WINDOW_UPDATE of 0")
		}
		c.sendWindow += inc
		if c.sendWindow > h2MaxStreamID {
			return h2Violation(http2.ErrCodeFlowControl, "WINDOW_UPDATE took the connection's window past 2^31-1")
		}
		return c.progressIfWaiting("connection WINDOW_UPDATE")
	}
	st := c.active(f.StreamID)
	if st == nil {
		if !c.opened(f.StreamID) {
			return h2Violation(http2.ErrCodeProtocol, "WINDOW_UPDATE on stream %d, which we never opened", f.StreamID)
		}
		return c.strike("WINDOW_UPDATE of a closed stream")
	}
	if inc == 0 {
		return h2Violation(http2.ErrCodeProtocol, "a WINDOW_UPDATE of 0 on stream %d", st.id)
	}
	st.sendWindow += inc
	if st.sendWindow > h2MaxStreamID {
		// A stream error (RFC 9113 section 6.9.1): the stream goes, the
		// connection and the other streams stay.
		return c.resetStream(st, http2.ErrCodeFlowControl, fmt.Errorf("%w: HTTP/2 FLOW_CONTROL_ERROR: WINDOW_UPDATE took stream %d's window past 2^31-1; stream reset", errMalformed, st.id))
	}
	return c.progressIfWaiting("stream WINDOW_UPDATE")
}

// resetStream ends st with err and tells the server with RST_STREAM code.
// In shared mode the reader flushes it with what else it wrote; a user's
// own connection is read again only by its next request, so it goes now.
func (c *h2conn) resetStream(st *h2stream, code http2.ErrCode, err error) error {
	c.strikes = 0
	c.finish(st, err)
	if err := c.fr.WriteRSTStream(st.id, code); err != nil {
		return err
	}
	if c.mux != nil {
		c.needFlush = true
		return nil
	}
	return c.bw.Flush()
}

// progressIfWaiting counts a window update as progress while a body waits
// for it, and as a strike otherwise.
func (c *h2conn) progressIfWaiting(what string) error {
	waiting := false
	c.each(func(st *h2stream) { waiting = waiting || st.bodyLeft() })
	if waiting {
		c.strikes = 0
		c.windowMoved()
		return nil
	}
	return c.strike(what)
}
