package demo

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// shutdownGrace bounds how long stop waits for in-flight requests; queued
// requests finish within DBWaitTimeout anyway, so this only matters for
// clients that hold connections open.
const shutdownGrace = 5 * time.Second

// Start listens on addr ("127.0.0.1:0" picks a free port; "" means that too,
// so the demo never listens beyond loopback unless asked) and serves a new
// Server until stop is called or ctx is done. url is the base URL clients
// should use, e.g. http://127.0.0.1:PORT. stop waits for the server to wrap
// up, is safe to call more than once, and returns the same result each time.
func Start(ctx context.Context, addr string, opts Options) (url string, stop func() error, err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	app, err := Open(ctx, opts)
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           app.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		// Requests inherit ctx so that cancelling it also releases handlers
		// queued for a pool connection, and shutdown doesn't wait on them.
		BaseContext: func(net.Listener) context.Context { return ctx },
		Protocols:   protocols(), // upload.go: HTTP/1.1 and h2c on one port
	}
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		served <- err
	}()

	var once sync.Once
	var stopErr error
	shutdown := func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			err := srv.Shutdown(sctx)
			if err != nil {
				// Grace ran out: drop the stragglers rather than hang the caller.
				srv.Close()
			}
			stopErr = errors.Join(err, <-served)
			app.CloseHub()
			app.Close()
		})
	}
	unwatch := context.AfterFunc(ctx, shutdown)
	stop = func() error {
		unwatch()
		shutdown() // waits for a shutdown already started by ctx
		return stopErr
	}
	return "http://" + urlHost(ln.Addr()), stop, nil
}

// urlHost turns a listen address into one a client can dial: a wildcard
// listener ("[::]:8080", "0.0.0.0:8080") is reached through loopback.
func urlHost(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
