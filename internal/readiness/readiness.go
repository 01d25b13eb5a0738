// Package readiness calls a function when a socket has something to read,
// without a goroutine parked per socket. Tens of thousands of idle
// WebSocket connections each kept one goroutine parked in a read (a 2 KB
// stack at least, often 4-8 KB after a message grew it, plus the
// runtime's descriptor); here they cost one table slot and one entry in an
// epoll set, and a goroutine exists only while a socket's data is being
// handled.
//
// It is Linux only (epoll); elsewhere Supported is false and callers keep
// a reading goroutine.
package readiness

import "errors"

// Handler is told that its socket became readable, hung up or failed. It
// runs on a goroutine of its own, at most one at a time per registration:
// the registration is disarmed until the handler calls Rearm.
type Handler interface {
	Ready()
}

// ErrWouldBlock is what Reg.Read returns when the socket holds nothing.
var ErrWouldBlock = errors.New("readiness: read would block")

// ErrUnsupported is what Register returns where there is no notifier, or
// for a connection that has no file descriptor.
var ErrUnsupported = errors.New("readiness: not supported for this connection")
