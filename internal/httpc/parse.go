package httpc

import (
	"bufio"
	"errors"
	"iter"
)

// ErrNeedMore is Parser.Parse's answer to bytes that hold only part of an
// answer while the connection is still open.
var ErrNeedMore = errors.New("httpc: answer incomplete, more bytes needed")

// Parser judges answers from bytes a caller read off its own sockets (the
// event-loop engine, internal/evloop) with the parser RoundTrip uses, so a
// hostile answer fails the same way, with the same class, in both engines.
// One Parser is used by one goroutine at a time.
type Parser struct {
	src byteSource
	br  *bufio.Reader
}

// NewParser returns a parser with RoundTrip's read buffer size, so a
// header line longer than it takes the same path as there.
func NewParser() *Parser {
	p := &Parser{}
	p.br = bufio.NewReaderSize(&p.src, 4096)
	return p
}

// byteSource hands the parser the bytes received so far, then end, or
// ErrNeedMore while the connection is open.
type byteSource struct {
	b   []byte
	end error
}

func (s *byteSource) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		if s.end != nil {
			return 0, s.end
		}
		return 0, ErrNeedMore
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// Parse parses one answer from b, every byte the connection received
// since the request was written. end is what the socket said after b
// (io.EOF, a read error), nil while it is open. reused says the
// connection carried an answer before: one it closes without a byte is
// ErrServerClosed, as in RoundTrip. It returns ErrNeedMore when b is
// only part of an answer; bytes after a complete answer fail it as
// RoundTrip's do. The limits are RoundTrip's (0: the defaults).
func (p *Parser) Parse(b []byte, end error, req *Request, resp *Response, maxHeader, maxKept int, reused bool) (closeAfter bool, err error) {
	maxHeader, maxKept = limitsOr(maxHeader, maxKept)
	p.src.b, p.src.end = b, end
	p.br.Reset(&p.src)
	closeAfter, err = readResponse(p.br, req, resp, maxHeader, maxKept)
	left := len(p.src.b) + p.br.Buffered()
	p.src.b, p.src.end = nil, nil
	if errors.Is(err, ErrNeedMore) {
		return false, ErrNeedMore
	}
	return answerEnd(closeAfter, err, reused, left)
}

// Stream parses one answer as its bytes come, in bounded memory: for an
// answer that Parse found incomplete (a big body, a slow server), the
// parser runs as a coroutine that is handed each read's bytes in turn and
// keeps no more of them than its read buffer, as RoundTrip's would.
type Stream struct {
	src        streamSource
	br         *bufio.Reader
	next       func() (struct{}, bool)
	stop       func()
	closeAfter bool
	err        error
}

// streamSource hands the streaming parser each read's bytes; between them
// it yields to the caller of Feed.
type streamSource struct {
	b     []byte
	end   error
	yield func(struct{}) bool
}

// errAbandoned ends a stream's parser when its request is given up.
var errAbandoned = errors.New("httpc: answer abandoned")

func (s *streamSource) Read(p []byte) (int, error) {
	for len(s.b) == 0 {
		if s.end != nil {
			return 0, s.end
		}
		if !s.yield(struct{}{}) {
			return 0, errAbandoned
		}
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// NewStream starts parsing the answer to req into resp; Parse's
// arguments.
func NewStream(req *Request, resp *Response, maxHeader, maxKept int, reused bool) *Stream {
	maxHeader, maxKept = limitsOr(maxHeader, maxKept)
	s := &Stream{}
	s.br = readers.Get().(*bufio.Reader)
	s.br.Reset(&s.src)
	s.next, s.stop = iter.Pull(func(yield func(struct{}) bool) {
		s.src.yield = yield
		closeAfter, err := readResponse(s.br, req, resp, maxHeader, maxKept)
		if !errors.Is(err, errAbandoned) {
			s.closeAfter, s.err = answerEnd(closeAfter, err, reused, len(s.src.b)+s.br.Buffered())
		}
	})
	return s
}

// Feed hands the stream the next bytes of the answer, b, and what the
// socket said after them (end; nil while it is open). It returns
// ErrNeedMore until the answer is complete, then Parse's outcome. b is
// not kept.
func (s *Stream) Feed(b []byte, end error) (closeAfter bool, err error) {
	s.src.b, s.src.end = b, end
	_, more := s.next()
	s.src.b = nil
	if more {
		return false, ErrNeedMore
	}
	return s.closeAfter, s.err
}

// Close ends the stream, complete or not, and gives its buffer back.
func (s *Stream) Close() {
	s.stop()
	if s.br != nil {
		s.br.Reset(nil)
		readers.Put(s.br)
		s.br = nil
	}
}
