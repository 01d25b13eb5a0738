//go:build linux

package evloop

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// A loop's failures: its own epoll set breaking ends the loop and tells
// the run; a socket the set does not take fails its request alone.

// fail is the loop's own epoll set failing (a wait or a registration
// meeting anything but EINTR): no readiness can be told any more, so the
// run hears of it (Config.Fail), and the loop ends every request it holds
// with the error (endAll), lets its users go and leaves, where a loop that
// went on waiting would spin or hang.
func (l *loop) fail(err error) {
	if l.fatal != nil {
		return
	}
	l.fatal = fmt.Errorf("evloop: the event loop failed: %w", err)
	if l.e.cfg.Fail != nil {
		l.e.cfg.Fail(l.fatal)
	}
}

// endAll ends with the loop's failure the requests it waits on: counted
// as failed, as a request whose connection broke is, under the step it
// was at (dial, write or read). A handshake ends on its own goroutine and
// is failed when it comes back (handshook).
func (l *loop) endAll() {
	now := time.Now()
	for _, c := range l.conns {
		if c != nil && c.state != 0 && c.state != stHandshaking {
			l.finish(c, l.opErr(stateOp(c), l.fatal), now)
		}
	}
}

// stateOp is what c's request was doing, as net names it in an error.
func stateOp(c *conn) string {
	switch c.state {
	case stConnecting:
		return "dial"
	case stWriting:
		return "write"
	}
	return "read"
}

// ctlFault, when set, stands in for the epoll_ctl of the loops' sockets:
// how a test meets the errors a set gives only at a system's limits
// (ENOSPC past max_user_watches). Set before New, reset after the loops
// ended.
var ctlFault func() error

func (l *loop) addEdge(c *conn, out bool) error {
	if ctlFault != nil {
		if err := ctlFault(); err != nil {
			return err
		}
	}
	return l.set.AddEdge(c.fd, c.slot, c.gen, out)
}

func (l *loop) modEdge(c *conn, out bool) error {
	if ctlFault != nil {
		if err := ctlFault(); err != nil {
			return err
		}
	}
	return l.set.ModEdge(c.fd, c.slot, c.gen, out)
}

// ctlFailed ends c's request, whose socket the set did not take (op: the
// request's step). EBADF and EINVAL say the set itself is broken: the
// loop fails (fail). Others (ENOSPC past max_user_watches, ENOMEM) are
// this socket's, as the goroutine engine's dial meets them in the
// runtime's poller: the request fails alone, and the run goes on.
func (l *loop) ctlFailed(c *conn, op string, err error) {
	if errors.Is(err, unix.EBADF) || errors.Is(err, unix.EINVAL) {
		l.fail(err)
	}
	l.finish(c, l.opErr(op, err), time.Now())
}
