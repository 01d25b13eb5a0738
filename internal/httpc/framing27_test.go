package httpc

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

// framingCases are the answers issue 27 found misjudged: a status below
// 100 was a success, conflicting Content-Lengths were read by the last
// (a timeout waiting for bytes never sent), and "chunked, gzip" was read
// as chunked though chunked is not its final coding.
var framingCases = []struct {
	name, raw string
	end       error
	wantErr   string // "" for a success
	bodyLen   int64
}{
	{name: "status 000", raw: "HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n", wantErr: "status 000 is not an HTTP status"},
	{name: "status 099", raw: "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n", wantErr: "status 099 is not an HTTP status"},
	{name: "conflicting Content-Length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 50\r\n\r\nok", wantErr: "conflicting Content-Length values 2 and 50"},
	{name: "repeated Content-Length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", bodyLen: 2},
	{name: "chunked, gzip", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n" + hostile.ChunkedNotLastBody, end: io.EOF, bodyLen: int64(len(hostile.ChunkedNotLastBody))},
	{name: "chunked then gzip lines", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n" + hostile.ChunkedNotLastBody, end: io.EOF, bodyLen: int64(len(hostile.ChunkedNotLastBody))},
	{name: "gzip, chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", bodyLen: 2},
}

// TestFramingRulesBothParsers: the event loop's parsers (Parse on the
// whole answer, Stream fed a byte at a time) and RoundTrip's judge each
// case alike: the same error or the same body length.
func TestFramingRulesBothParsers(t *testing.T) {
	req := &Request{Method: "GET"}
	for _, c := range framingCases {
		var whole, streamed Response
		_, err := NewParser().Parse([]byte(c.raw), c.end, req, &whole, 0, 0, false)
		checkFraming(t, c.name+" (Parse)", err, whole.BodyLen, c.wantErr, c.bodyLen)
		s := NewStream(req, &streamed, 0, 0, false)
		errS := ErrNeedMore
		for i := 0; i < len(c.raw) && errors.Is(errS, ErrNeedMore); i++ {
			_, errS = s.Feed([]byte(c.raw[i:i+1]), nil)
		}
		if errors.Is(errS, ErrNeedMore) {
			_, errS = s.Feed(nil, c.end)
		}
		s.Close()
		checkFraming(t, c.name+" (Stream)", errS, streamed.BodyLen, c.wantErr, c.bodyLen)

		ep := rawServer(t, c.raw, c.end != nil)
		h := NewH1()
		var resp Response
		r := get(ep, "/")
		r.Timeout = 5 * time.Second
		err = h.RoundTrip(r, &resp)
		h.Close()
		checkFraming(t, c.name+" (RoundTrip)", err, resp.BodyLen, c.wantErr, c.bodyLen)
	}
}

func checkFraming(t *testing.T, what string, err error, bodyLen int64, wantErr string, wantLen int64) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v, want success", what, err)
	case wantErr == "" && bodyLen != wantLen:
		t.Errorf("%s: body %d bytes, want %d", what, bodyLen, wantLen)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr) || Classify(err) != sample.Other):
		t.Errorf("%s: %v (class %v), want the malformed answer %q", what, err, Classify(err), wantErr)
	}
}
