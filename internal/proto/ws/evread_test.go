//go:build linux

package ws

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The servers here write frames byte by byte as the test decides, so
// that frames split anywhere, bytes sent with the 101 answer and frames
// that race the client's re-arming can all be staged.

// rawServer upgrades every connection, writing first(i) for the i-th in
// the same write as the 101 answer, and hands the server's side on.
func rawServer(t *testing.T, first func(i int) []byte) (url string, peers chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return "ws://" + ln.Addr().String() + "/", serveRaw(t, ln, first)
}

// serveRaw is rawServer's server on ln.
func serveRaw(t *testing.T, ln net.Listener, first func(i int) []byte) (peers chan net.Conn) {
	peers = make(chan net.Conn, 1024)
	var mu sync.Mutex
	var all []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			// The client sends its request and waits, so this reader
			// cannot take bytes that are not the request's.
			req, err := http.ReadRequest(bufio.NewReader(nc))
			if err != nil {
				nc.Close()
				continue
			}
			h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
			resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
				base64.StdEncoding.EncodeToString(h[:]) + "\r\n\r\n"
			var b []byte
			if first != nil {
				b = first(i)
			}
			nc.Write(append([]byte(resp), b...))
			mu.Lock()
			all = append(all, nc)
			mu.Unlock()
			peers <- nc
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, nc := range all {
			nc.Close()
		}
		mu.Unlock()
	})
	return peers
}

// frame is one unmasked frame as a server sends it.
func frame(op byte, fin bool, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var b []byte
	switch n := len(payload); {
	case n < 126:
		b = []byte{b0, byte(n)}
	case n < 1<<16:
		b = []byte{b0, 126, byte(n >> 8), byte(n)}
	default:
		b = []byte{b0, 127, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint64(b[2:], uint64(n))
	}
	return append(b, payload...)
}

// clientFrames reads the client's (masked) frames until the socket ends,
// calling f with each frame's opcode and unmasked payload.
func clientFrames(nc net.Conn, f func(op byte, payload []byte)) {
	br := bufio.NewReader(nc)
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(br, e[:]); err != nil {
				return
			}
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(br, e[:]); err != nil {
				return
			}
			n = binary.BigEndian.Uint64(e[:])
		}
		var key [4]byte
		if _, err := io.ReadFull(br, key[:]); err != nil {
			return
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			return
		}
		for i := range p {
			p[i] ^= key[i%4]
		}
		f(h[0]&0x0f, p)
	}
}

// seqHandler checks that messages come in order and whole: each is
// "<conn>:<seq>:" followed by filler that depends on both.
type seqHandler struct {
	id    int
	next  atomic.Int64
	bad   atomic.Value // string: the first mistake
	total *atomic.Int64
}

func payloadOf(id, seq, size int) []byte {
	p := []byte(fmt.Sprintf("%d:%d:", id, seq))
	for i := 0; len(p) < size; i++ {
		p = append(p, byte('a'+(id+seq+i)%26))
	}
	return p
}

func (h *seqHandler) Message(_ *Conn, _ MessageType, data []byte) error {
	parts := strings.SplitN(string(data), ":", 3)
	seq := h.next.Load()
	if len(parts) != 3 {
		h.bad.CompareAndSwap(nil, fmt.Sprintf("conn %d: message %d is %.40q", h.id, seq, data))
	} else if want := payloadOf(h.id, int(seq), len(data)); string(want) != string(data) {
		h.bad.CompareAndSwap(nil, fmt.Sprintf("conn %d: message %d is %.40q, want %.40q", h.id, seq, data, want))
	}
	h.next.Add(1)
	h.total.Add(1)
	return nil
}

func (h *seqHandler) Closed(*Conn, *Disconnect) *Disconnect { return nil }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitCount(t *testing.T, what string, got func() int64, want int64) {
	t.Helper()
	// A safety net only: the counts are what is checked.
	deadline := time.Now().Add(60 * time.Second)
	for got() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, got(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleConnsHoldNoGoroutine: idle connections read on readiness add
// no goroutine each (with a goroutine per reader, 200 connections added
// 200), and pushes that arrive afterwards, in any order across them, are
// all delivered, each connection's in order.
func TestIdleConnsHoldNoGoroutine(t *testing.T) {
	const n, per = 200, 5
	url, peers := rawServer(t, nil)
	var total atomic.Int64
	o := &Options{KeepAlive: time.Hour, IdleTimeout: 2 * time.Hour}
	base := runtime.NumGoroutine()
	conns := make([]*Conn, n)
	hs := make([]*seqHandler, n)
	srv := make([]net.Conn, n)
	for i := range conns {
		hs[i] = &seqHandler{id: i, total: &total}
		c, err := Dial(context.Background(), url, nil, o, hs[i])
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		srv[i] = <-peers
	}
	added := runtime.NumGoroutine() - base
	t.Logf("%d idle connections added %d goroutines", n, added)
	if added > n/20 {
		t.Errorf("%d idle connections added %d goroutines, want about none", n, added)
	}
	var order []int
	for i := range n {
		for range per {
			order = append(order, i)
		}
	}
	rand.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	sent := make([]int, n)
	for _, i := range order {
		if _, err := srv[i].Write(frame(1, true, payloadOf(i, sent[i], 20+sent[i]*300))); err != nil {
			t.Fatal(err)
		}
		sent[i]++
	}
	waitCount(t, "messages delivered", total.Load, n*per)
	for _, h := range hs {
		if b := h.bad.Load(); b != nil {
			t.Error(b)
		}
		if got := h.next.Load(); got != per {
			t.Errorf("conn %d got %d messages, want %d", h.id, got, per)
		}
	}
	waitUntil(t, "the goroutines that handled the pushes end", func() bool { return runtime.NumGoroutine()-base <= n/20 })
	for _, c := range conns {
		c.Abort()
	}
}

// bothModes runs f with reads on readiness and with a reading goroutine.
func bothModes(t *testing.T, f func(t *testing.T, goroutine bool)) {
	t.Run("readiness", func(t *testing.T) { f(t, false) })
	t.Run("goroutine", func(t *testing.T) { f(t, true) })
}

// TestHostileOrder: a server sends messages split at random bytes, at
// random instants, so that data keeps arriving while a connection
// re-arms; messages in several frames with pings between them; messages
// far larger than a read; the first message in the 101 answer's own
// packet. Every message arrives once, whole, in order, and every ping is
// answered.
func TestHostileOrder(t *testing.T) {
	bothModes(t, func(t *testing.T, goroutine bool) {
		const n, per = 12, 150
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		url, peers := rawServer(t, func(i int) []byte { return frame(1, true, payloadOf(i, 0, 40)) })
		var total atomic.Int64
		o := &Options{goroutineReads: goroutine, ReadLimit: 1 << 20}
		hs := make([]*seqHandler, n)
		conns := make([]*Conn, n)
		var pings, pongs atomic.Int64
		var wg sync.WaitGroup
		for i := range n {
			hs[i] = &seqHandler{id: i, total: &total}
			c, err := Dial(context.Background(), url, nil, o, hs[i])
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
			nc := <-peers
			go clientFrames(nc, func(op byte, p []byte) {
				if op == 0xA && strings.HasPrefix(string(p), "ping") {
					pongs.Add(1)
				}
			})
			wg.Add(1)
			go func(i int, nc net.Conn) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				var stream []byte
				ping := func() {
					stream = append(stream, frame(9, true, []byte("ping"+strconv.Itoa(r.IntN(1000))))...)
					pings.Add(1)
				}
				for seq := 1; seq <= per; seq++ {
					size := r.IntN(3000)
					if r.IntN(10) == 0 {
						size = 5000 + r.IntN(70000)
					}
					p := payloadOf(i, seq, size)
					switch k := r.IntN(10); {
					case k < 3:
						// In several frames, pings and pongs between them.
						parts := 2 + r.IntN(3)
						op := byte(1)
						for j := range parts {
							lo, hi := len(p)*j/parts, len(p)*(j+1)/parts
							stream = append(stream, frame(op, j == parts-1, p[lo:hi])...)
							op = 0
							if r.IntN(2) == 0 {
								ping()
							} else {
								stream = append(stream, frame(10, true, nil)...)
							}
						}
					case k < 4:
						ping()
						fallthrough
					default:
						stream = append(stream, frame(1, true, p)...)
					}
				}
				for len(stream) > 0 {
					m := min(len(stream), 1+r.IntN(3000))
					if _, err := nc.Write(stream[:m]); err != nil {
						return
					}
					stream = stream[m:]
					if r.IntN(3) == 0 {
						time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
					}
				}
			}(i, nc)
		}
		wg.Wait()
		waitCount(t, "messages delivered", total.Load, n*(per+1))
		waitCount(t, "pings answered", pongs.Load, pings.Load())
		for _, h := range hs {
			if b := h.bad.Load(); b != nil {
				t.Error(b)
			}
			if got := h.next.Load(); got != per+1 {
				t.Errorf("conn %d got %d messages, want %d", h.id, got, per+1)
			}
		}
		for _, c := range conns {
			if d := c.Disconnect(); d != nil {
				t.Errorf("ended: %v", d)
			}
			c.Close(1000, "")
		}
	})
}

// TestCloseWhileDispatching: Close and Abort land while messages of a
// flood are being handled; once they return, the messages counted and
// the messages handed to the handler agree, and none is handed on later.
func TestCloseWhileDispatching(t *testing.T) {
	const n = 30
	url, peers := rawServer(t, nil)
	var floods sync.WaitGroup
	type one struct {
		c  *Conn
		h  *countHandler
		ct *Counters
	}
	all := make([]one, n)
	for i := range all {
		ct := &Counters{}
		h := &countHandler{count: true}
		// The close handshake goes unanswered; CloseTimeout also bounds
		// the wait for a message being handled, so it is generous.
		c, err := Dial(context.Background(), url, nil, &Options{Counters: ct, CloseTimeout: 3 * time.Second}, h)
		if err != nil {
			t.Fatal(err)
		}
		all[i] = one{c, h, ct}
		nc := <-peers
		floods.Add(1)
		go func() {
			defer floods.Done()
			go io.Copy(io.Discard, nc)
			f := frame(1, true, []byte("flood"))
			// Bounded; the client ends mostly before.
			for range 100000 {
				if _, err := nc.Write(f); err != nil {
					return
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for i, o := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waitCount(t, "messages before the end", func() int64 { return min(o.h.n.Load(), int64(1+i)) }, int64(1+i))
			if i%2 == 0 {
				o.c.Close(1000, "")
			} else {
				o.c.Abort()
			}
			in, got := o.ct.MsgsIn.Load(), o.h.n.Load()
			if in != got {
				t.Errorf("conn %d: %d messages counted, %d handed on", i, in, got)
			}
			if d := o.c.Disconnect(); d == nil || d.Reason != ClientClose {
				t.Errorf("conn %d: disconnect %v", i, d)
			}
		}()
	}
	wg.Wait()
	floods.Wait()
	for i, o := range all {
		if in, got := o.ct.MsgsIn.Load(), o.h.n.Load(); in != got {
			t.Errorf("conn %d, later: %d messages counted, %d handed on", i, in, got)
		}
	}
}

func fdOf(t *testing.T, c *Conn) int {
	sc, ok := c.ws.NetConn().(*hsConn).Conn.(syscall.Conn)
	if !ok {
		t.Fatal("no descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// TestDescriptorReuse: a connection closed in the middle of a flood and
// a new one opened at once, usually on the same descriptor number: the
// new one gets only its own messages and the old one none after its end.
func TestDescriptorReuse(t *testing.T) {
	url, peers := rawServer(t, nil)
	reused := 0
	for i := range 150 {
		ha := &countHandler{}
		a, err := Dial(context.Background(), url, nil, &Options{}, ha)
		if err != nil {
			t.Fatal(err)
		}
		na := <-peers
		done := make(chan struct{})
		go func() {
			defer close(done)
			f := frame(1, true, []byte("A"+strconv.Itoa(i)))
			for range 100000 {
				if _, err := na.Write(f); err != nil {
					return
				}
			}
		}()
		waitCount(t, "old connection's messages", func() int64 { return min(ha.n.Load(), 3) }, 3)
		fd := fdOf(t, a)
		a.Abort()
		nA := ha.n.Load()
		hb := &countHandler{}
		b, err := Dial(context.Background(), url, nil, &Options{}, hb)
		if err != nil {
			t.Fatal(err)
		}
		if fdOf(t, b) == fd {
			reused++
		}
		nb := <-peers
		for range 3 {
			nb.Write(frame(1, true, []byte("B"+strconv.Itoa(i))))
		}
		waitCount(t, "new connection's messages", hb.n.Load, 3)
		na.Close()
		<-done
		b.Abort()
		nb.Close()
		if got := ha.n.Load(); got != nA {
			t.Fatalf("round %d: the old connection got %d messages after its end", i, got-nA)
		}
		hb.mu.Lock()
		for _, m := range hb.msgs {
			if m != "B"+strconv.Itoa(i) {
				t.Fatalf("round %d: the new connection got %q", i, m)
			}
		}
		hb.mu.Unlock()
	}
	t.Logf("descriptor reused in %d of 150 rounds", reused)
	if reused == 0 {
		t.Error("no descriptor was reused: the test did not test reuse")
	}
}

// A header announcing a big frame reserves nothing until its bytes come:
// a hostile server that announces 1 MiB frames and sends 3 bytes of each
// made every connection reserve the whole read limit.
func TestRoomGrowsWithTheBytesNotTheAnnouncement(t *testing.T) {
	st := &evState{in: make([]byte, 0, evChunk)}
	st.in = append(st.in, 0x82, 127, 0, 0, 0, 0, 0, 0x0f, 0xff, 0xf0, 1, 2, 3)
	st.need = 10 + 0xffff0
	st.room()
	if cap(st.in) > evChunk {
		t.Fatalf("3 bytes of an announced 1 MiB frame reserved %d bytes", cap(st.in))
	}
	for grows := 0; len(st.in) < st.need; grows++ {
		if grows > 20 {
			t.Fatalf("the buffer stopped growing at %d of %d bytes", cap(st.in), st.need)
		}
		st.in = st.in[:cap(st.in)] // the socket filled it
		st.room()
		if cap(st.in) > st.need {
			t.Fatalf("grew to %d bytes for a %d-byte frame", cap(st.in), st.need)
		}
		if cap(st.in) == len(st.in) && len(st.in) < st.need {
			t.Fatalf("no room made at %d bytes", len(st.in))
		}
		st.in = st.in[:min(cap(st.in), st.need)]
	}
}
