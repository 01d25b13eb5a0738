package ws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/sample"
)

// Error is a failed WebSocket operation with its failure class already
// decided, so the engine never has to guess from error text.
type Error struct {
	Op     string // dial, upgrade, write, wait, close
	Class  sample.Class
	Status int // HTTP status of a refused upgrade
	Msg    string
	Err    error
	// A refused upgrade's Retry-After (RetryAfter).
	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *Error) Error() string { return "ws " + e.Op + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Reason says why a connection ended. Reports count disconnects by reason,
// because "the server dropped 3% of kitchen displays" and "3% went silent"
// point at different faults.
type Reason uint8

const (
	StillOpen     Reason = iota
	ClientClose          // we closed it: the scenario's normal end
	ServerClose          // the peer sent a close (WebSocket close frame or SignalR Close message)
	PingTimeout          // the server said nothing for longer than the idle timeout
	NetworkReset         // TCP reset or EOF without a close frame
	ProtocolError        // bad frame, message over the read limit, bad SignalR record
	WriteFailed          // a send failed (the socket was already broken)
	TokenRefused         // the server refused the access token (SignalR: 401 to a poll, a send or a reconnect's dial)
	NumReasons
)

var reasonNames = [NumReasons]string{"open", "client_close", "server_close", "ping_timeout", "network_reset", "protocol_error", "write_failed", "token_refused"}

func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "invalid"
}

// Disconnect is how and why a connection ended. It is an error so protocol
// layers can return one from a handler to end the connection with their own
// reason (a SignalR Close message, a bad record).
type Disconnect struct {
	Reason Reason
	Class  sample.Class // sample.OK only for ClientClose
	Code   int          // WebSocket close code the peer sent, 0 if none
	Text   string       // close reason, server error text, or Go error text
	// AllowReconnect is what a SignalR Close message said.
	AllowReconnect bool
	Err            error
}

func (d *Disconnect) Error() string {
	switch {
	case d.Code != 0 && d.Text != "":
		return fmt.Sprintf("%s (close %d: %s)", d.Reason, d.Code, d.Text)
	case d.Code != 0:
		return fmt.Sprintf("%s (close %d)", d.Reason, d.Code)
	case d.Text != "":
		return d.Reason.String() + ": " + d.Text
	}
	return d.Reason.String()
}

func (d *Disconnect) Unwrap() error { return d.Err }

// Classify returns the failure class of any error this package returns,
// falling back to the HTTP client's rules for bare transport errors.
func Classify(err error) sample.Class {
	if err == nil {
		return sample.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	var d *Disconnect
	if errors.As(err, &d) {
		return d.Class
	}
	return httpc.Classify(err)
}

// dialError turns a failed dial into an Error. A refused upgrade keeps its
// HTTP status so 429 and 5xx from a saturated hub read like HTTP failures.
func dialError(err error, resp *http.Response, ctx context.Context) *Error {
	if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
		st := resp.StatusCode
		msg := fmt.Sprintf("%d %s", st, http.StatusText(st))
		cl := sample.FromStatus(st)
		if cl == sample.OK {
			cl = sample.Other
			if st == http.StatusSwitchingProtocols {
				msg = "invalid 101 answer (bad Upgrade, Connection or Sec-WebSocket-Accept)"
			} else {
				msg = "expected 101 Switching Protocols, got " + msg
			}
		}
		e := &Error{Op: "upgrade", Class: cl, Status: st, Msg: msg, Err: err}
		e.retryAfter, e.hasRetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return e
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return &Error{Op: "dial", Class: sample.Interrupted, Msg: "canceled: " + err.Error(), Err: err}
	}
	// The deadline is put on the socket too, so the error may be an i/o
	// timeout that fires a hair before the context's own.
	if cl := httpc.Classify(err); cl == sample.Timeout || ctx.Err() != nil && cl != sample.ConnRefused {
		return &Error{Op: "dial", Class: sample.Timeout, Msg: "connect timed out: " + err.Error(), Err: err}
	}
	return &Error{Op: "dial", Class: httpc.Classify(err), Msg: err.Error(), Err: err}
}

// readDisconnect classifies the error that ended the read loop.
func readDisconnect(err error, limit int64) *Disconnect {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Code == websocket.CloseAbnormalClosure {
			return &Disconnect{Reason: NetworkReset, Class: sample.ConnReset, Text: "connection closed without a close frame", Err: err}
		}
		return &Disconnect{Reason: ServerClose, Class: closeClass(ce.Code), Code: ce.Code, Text: ce.Text, Err: err}
	}
	if errors.Is(err, websocket.ErrReadLimit) {
		return &Disconnect{Reason: ProtocolError, Class: sample.Other,
			Text: fmt.Sprintf("message larger than the read limit of %d bytes", limit), Err: err}
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) {
		return &Disconnect{Reason: NetworkReset, Class: sample.ConnReset, Text: err.Error(), Err: err}
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Disconnect{Reason: PingTimeout, Class: sample.Timeout, Text: err.Error(), Err: err}
	}
	// What is left is gorilla's protocol errors: bad opcodes, unmasked
	// control frames, invalid UTF-8 close reasons and the like.
	return &Disconnect{Reason: ProtocolError, Class: sample.Other, Text: err.Error(), Err: err}
}

// closeClass maps a peer's close code to a failure class. A normal close
// from the server still ends a connection the scenario wanted open, so it
// counts like a server hanging up a kept-alive HTTP connection: conn_reset.
func closeClass(code int) sample.Class {
	switch code {
	case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived:
		return sample.ConnReset
	case websocket.CloseInternalServerErr, websocket.CloseServiceRestart, websocket.CloseTryAgainLater, 1014:
		return sample.ServerError
	}
	return sample.Other
}
