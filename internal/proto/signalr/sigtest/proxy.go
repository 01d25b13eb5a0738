package sigtest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// CutProxy forwards loopback TCP to a hub and can swallow the traffic of
// its current connections (what was in flight when a link died) and cut
// them; connections made later pass untouched.
type CutProxy struct {
	ln       net.Listener
	target   string
	Accepted atomic.Int64 // connections forwarded
	mu       sync.Mutex
	conns    []net.Conn
	drops    []*atomic.Bool
	hang     atomic.Bool
	Hung     atomic.Int64 // connections accepted and left unanswered
	wg       sync.WaitGroup
}

func NewCutProxy(t testing.TB, target string) *CutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			if p.hang.Load() {
				// Held open, never answered, until the proxy closes.
				p.mu.Lock()
				p.conns = append(p.conns, a)
				p.mu.Unlock()
				p.Hung.Add(1)
				continue
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				a.Close()
				continue
			}
			p.Accepted.Add(1)
			drop := new(atomic.Bool)
			p.mu.Lock()
			p.conns = append(p.conns, a, b)
			p.drops = append(p.drops, drop)
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(a, b, drop)
			go p.pipe(b, a, drop)
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *CutProxy) pipe(src, dst net.Conn, drop *atomic.Bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !drop.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				dst.Close()
			}
			return
		}
	}
}

// Swallow drops from now on all the current connections carry.
func (p *CutProxy) Swallow() {
	p.mu.Lock()
	for _, d := range p.drops {
		d.Store(true)
	}
	p.mu.Unlock()
}

// Cut closes every proxied connection, both sides.
func (p *CutProxy) Cut() {
	p.mu.Lock()
	cs := p.conns
	p.conns, p.drops = nil, nil
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (p *CutProxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

// Hang makes connections accepted from now on go unanswered: a server
// that takes the TCP connection and then says nothing.
func (p *CutProxy) Hang() { p.hang.Store(true) }

// Addr is where clients connect.
func (p *CutProxy) Addr() string { return p.ln.Addr().String() }

// StopAccepting refuses new connections from now on.
func (p *CutProxy) StopAccepting() { p.ln.Close() }
