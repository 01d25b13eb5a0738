package ws

import (
	"bytes"
	"context"
	"errors"
	"regexp"

	"github.com/stampede-load/stampede/internal/jsonpath"
	"github.com/stampede-load/stampede/internal/sample"
)

// Matcher selects an incoming message: the value at a dotted JSON path
// equals a string (as a capture of it reads: numbers, booleans and null by
// their JSON text as written, objects as compact JSON; internal/jsonpath),
// or a regular expression matches the raw message. An empty Matcher
// matches any message.
type Matcher struct {
	Path   []string // as plan captures: "order.items.0.id" split at dots
	Equals string
	Regex  *regexp.Regexp
}

// Match reports whether data is selected.
func (m *Matcher) Match(data []byte) bool {
	if m.Regex != nil && !m.Regex.Match(data) {
		return false
	}
	if len(m.Path) > 0 {
		v, ok := jsonpath.Lookup(data, m.Path)
		return ok && v == m.Equals
	}
	return true
}

// Waiter is a registered wait for a matching message. Registering before
// sending the request means the answer cannot slip past unseen.
type Waiter struct {
	c  *Conn
	m  Matcher
	ch chan []byte
}

// Expect registers a wait for a message matching m. Call Wait once.
func (c *Conn) Expect(m Matcher) *Waiter {
	w := &Waiter{c: c, m: m, ch: make(chan []byte, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disc != nil {
		close(w.ch)
		return w
	}
	for i, b := range c.backlog {
		if w.m.Match(b) {
			c.backlog = append(c.backlog[:i], c.backlog[i+1:]...)
			w.ch <- b
			return w
		}
	}
	c.waiters = append(c.waiters, w)
	c.nwait.Add(1)
	return w
}

// ErrWaitTimeout is the cause of a WaitFor that saw no matching message.
var ErrWaitTimeout = errors.New("no matching message before the deadline")

// Wait returns a copy of the first matching message. A context deadline is
// class timeout; the connection ending is classified by its reason.
func (w *Waiter) Wait(ctx context.Context) ([]byte, error) {
	select {
	case b, ok := <-w.ch:
		if ok {
			return b, nil
		}
		return nil, w.c.endedError("wait")
	case <-ctx.Done():
	}
	w.c.drop(w)
	select {
	case b, ok := <-w.ch: // matched while we gave up
		if ok {
			return b, nil
		}
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, &Error{Op: "wait", Class: sample.Timeout, Msg: ErrWaitTimeout.Error(), Err: ErrWaitTimeout}
	}
	return nil, &Error{Op: "wait", Class: sample.Interrupted, Msg: "canceled", Err: ctx.Err()}
}

// WaitFor waits for a message matching m, also looking at the backlog of
// messages that arrived before the call. Without a Backlog, an answer that
// arrives before WaitFor is called is missed: use Expect before sending.
func (c *Conn) WaitFor(ctx context.Context, m Matcher) ([]byte, error) {
	return c.Expect(m).Wait(ctx)
}

func (c *Conn) drop(w *Waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			c.nwait.Add(-1)
			return
		}
	}
}

// offer hands a message to the first waiter it matches, or keeps it in the
// backlog. Runs on the read goroutine.
func (c *Conn) offer(data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.waiters {
		if w.m.Match(data) {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			c.nwait.Add(-1)
			w.ch <- bytes.Clone(data)
			return
		}
	}
	if n := c.o.Backlog; n > 0 {
		if len(c.backlog) >= n {
			c.backlog = append(c.backlog[:0], c.backlog[1:]...)
		}
		c.backlog = append(c.backlog, bytes.Clone(data))
	}
}
