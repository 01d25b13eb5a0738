package dashboard

import (
	"bytes"
	"context"
	"time"

	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
)

// renderHTML draws the report; a variable so a test can count the renders
// the real renderer does.
var renderHTML = report.HTML

// rendering is a render under way: pages asking for the same update wait
// for it instead of drawing the report again, so the cost is once per
// update however many pages watch (as docs/reference/reports.md says).
type rendering struct {
	seq  int
	done chan struct{}
	html []byte
	err  error
}

// render returns the report of update seq, whose figures are cur: the one
// kept if it is that update's, else the render under way for it, else a
// new render. Rendering happens outside s.mu, so a page never holds up the
// run's pump.
func (s *Sink) render(ctx context.Context, cur *result.Result, seq int) ([]byte, error) {
	s.mu.Lock()
	if s.html != nil && s.htmlSeq == seq {
		html := s.html
		s.mu.Unlock()
		return html, nil
	}
	if p := s.inflight; p != nil && p.seq == seq {
		s.mu.Unlock()
		select {
		case <-p.done:
			return p.html, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p := &rendering{seq: seq, done: make(chan struct{})}
	s.inflight = p
	s.mu.Unlock()

	start := time.Now()
	var b bytes.Buffer
	took := timed(func() { p.err = renderHTML(&b, cur) })
	p.html = b.Bytes()
	s.mu.Lock()
	if p.err == nil && (s.htmlSeq < seq || s.html == nil) {
		s.html, s.htmlSeq = p.html, seq
	}
	s.renderedAt, s.renderTook = start, took
	if s.inflight == p {
		s.inflight = nil
	}
	s.mu.Unlock()
	close(p.done)
	return p.html, p.err
}
