package signalr

import (
	"context"
	"net/http"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// Hold runs one persistent connection of a population: connect, make the
// calls in order (joining groups, typically), then stay connected,
// counting pushes, until ctx ends, and close cleanly. It returns nil when
// the connection lasted; otherwise the first failure, already recorded.
func Hold(ctx context.Context, hub string, hdr http.Header, o *Options, calls []Call) error {
	c, err := Connect(ctx, hub, hdr, o)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, cl := range calls {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if cl.Timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, cl.Timeout)
		}
		switch cl.Mode {
		case ModeSend:
			err = c.Send(cl.Method, cl.Args...)
		case ModeStream:
			_, err = c.Stream(cctx, cl.Method, cl.Args, nil)
		default:
			_, err = c.Invoke(cctx, cl.Method, cl.Args...)
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				// The run ended while a call was in flight: not the
				// hub's fault, and already recorded as interrupted.
				_ = c.CloseAtEnd()
				return nil
			}
			c.Close()
			return err
		}
	}
	select {
	case <-ctx.Done():
		_ = c.CloseAtEnd()
		o.record(OpSession, sample.OK, time.Since(start), nil)
		return nil
	case <-c.Done():
		d := c.Disconnect()
		o.record(OpSession, d.Class, time.Since(start), d)
		return d
	}
}
