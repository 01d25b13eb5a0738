package httpc

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Parse on an answer's bytes and Stream fed one byte at a time judge
// alike: the same status, body length, close and error, for sound
// answers and broken ones; and Parse says ErrNeedMore for any cut-short
// prefix of an answer while the connection is open.
func TestParseAndStreamAgree(t *testing.T) {
	answers := []struct {
		raw     string
		end     error // what the socket says after raw
		wantErr bool
		// whole: the stream gets it in one feed (bytes after the answer
		// are only seen with it; later ones are the next answer's).
		whole bool
	}{
		{raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
		{raw: "HTTP/1.1 204 No Content\r\n\r\n"},
		{raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n3;x=y\r\nabc\r\n0\r\nT: t\r\n\r\n"},
		{raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
		{raw: "HTTP/1.1 200 OK\r\n\r\nto the close", end: io.EOF},
		{raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok and more", wantErr: true, whole: true},
		{raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", end: io.EOF, wantErr: true},
		{raw: "SSH-2.0-OpenSSH_9.6\r\n\r\n", wantErr: true},
		{raw: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("h", 70<<10), wantErr: true},
	}
	req := &Request{Method: "GET"}
	for _, a := range answers {
		var whole, streamed Response
		p := NewParser()
		ca, err := p.Parse([]byte(a.raw), a.end, req, &whole, 0, 0, false)
		if (err != nil) != a.wantErr || errors.Is(err, ErrNeedMore) {
			t.Errorf("%.40q: Parse err = %v, want error %v", a.raw, err, a.wantErr)
			continue
		}
		s := NewStream(req, &streamed, 0, 0, false)
		var cb bool
		var errB = ErrNeedMore
		step := 1
		if a.whole {
			step = len(a.raw)
		}
		for i := 0; i < len(a.raw) && errors.Is(errB, ErrNeedMore); i += step {
			cb, errB = s.Feed([]byte(a.raw[i:min(i+step, len(a.raw))]), nil)
		}
		if errors.Is(errB, ErrNeedMore) {
			cb, errB = s.Feed(nil, a.end)
			if errors.Is(errB, ErrNeedMore) && a.end == nil && !a.wantErr {
				t.Errorf("%.40q: stream still wants more after the whole answer", a.raw)
			}
		}
		s.Close()
		// A stream fed byte by byte meets bytes after a complete answer
		// in a later feed, which Parse sees in the same one: both fail.
		if (errB != nil && !errors.Is(errB, ErrNeedMore)) != (err != nil) && !(a.wantErr && errors.Is(errB, ErrNeedMore)) {
			t.Errorf("%.40q: Parse err %v, Stream err %v", a.raw, err, errB)
		}
		if err == nil && (cb != ca || whole.Status != streamed.Status || whole.BodyLen != streamed.BodyLen) {
			t.Errorf("%.40q: Parse (%v %d %d), Stream (%v %d %d)", a.raw, ca, whole.Status, whole.BodyLen, cb, streamed.Status, streamed.BodyLen)
		}
		for i := 1; i < len(a.raw) && err == nil && a.end == nil; i++ {
			var r Response
			if _, e := p.Parse([]byte(a.raw[:i]), nil, req, &r, 0, 0, false); !errors.Is(e, ErrNeedMore) {
				t.Errorf("%.40q cut at %d: err %v, want ErrNeedMore", a.raw, i, e)
				break
			}
		}
	}
}

// A kept connection that the server closed before a byte of the answer
// is ErrServerClosed, as in RoundTrip; on a new connection it is EOF.
func TestParseServerClosed(t *testing.T) {
	p := NewParser()
	var r Response
	if _, err := p.Parse(nil, io.EOF, &Request{Method: "GET"}, &r, 0, 0, true); !errors.Is(err, ErrServerClosed) {
		t.Errorf("reused: %v, want ErrServerClosed", err)
	}
	if _, err := p.Parse(nil, io.EOF, &Request{Method: "GET"}, &r, 0, 0, false); !errors.Is(err, io.EOF) {
		t.Errorf("new: %v, want EOF", err)
	}
}
