package run

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS answers every A query for any name with the address it holds
// now, and AAAA queries with no address, over the stream framing Go's
// resolver uses on a conn that is not a net.PacketConn.
type fakeDNS struct{ addr atomic.Pointer[[4]byte] }

func (f *fakeDNS) dial(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	go f.serve(server)
	return client, nil
}

func (f *fakeDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		ans, err := f.answer(q)
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(ans)))
		if _, err := c.Write(append(out, ans...)); err != nil {
			return
		}
	}
}

func (f *fakeDNS) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if q.Type == dnsmessage.TypeA {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
		if err := b.AResource(rh, dnsmessage.AResource{A: *f.addr.Load()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// useFakeDNS sends every lookup of the process to f until the test ends;
// names in /etc/hosts still resolve from it. Not for parallel tests.
func useFakeDNS(t *testing.T, f *fakeDNS) {
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: f.dial}
	t.Cleanup(func() { net.DefaultResolver = old })
}

// closingServer answers 200 and closes (Connection: close), so every
// request is a dial, and counts requests; after switchAt of them it runs
// atSwitch once.
func closingServer(t *testing.T, ln net.Listener, n *atomic.Int64, switchAt int64, atSwitch func()) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == switchAt && atSwitch != nil {
			atSwitch()
		}
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// A name whose address changes mid-run: the goroutine engine resolves at
// every dial, so once the name points at the second server the requests
// that follow go there; the loop resolves once per run (evloop's
// Engine.resolve), so every request goes to the first address. The
// documented difference (docs/explanations/engines.md), pinned on counts:
// the switch happens after the first server's fifth request, not at a time.
func TestEnginesDNSChangeMidRun(t *testing.T) {
	needLoop(t)
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lnA.Addr().(*net.TCPAddr).Port
	lnB, err := net.Listen("tcp", "127.0.0.2:"+strconv.Itoa(port))
	if err != nil {
		lnA.Close()
		t.Skipf("no second loopback address on port %d: %v", port, err)
	}
	dns := &fakeDNS{}
	useFakeDNS(t, dns)
	var toA, toB atomic.Int64
	a, b := [4]byte{127, 0, 0, 1}, [4]byte{127, 0, 0, 2}
	closingServer(t, lnA, &toA, 5, func() { dns.addr.Store(&b) })
	closingServer(t, lnB, &toB, 0, nil)
	for _, engine := range []string{EngineGoroutines, EngineLoop} {
		dns.addr.Store(&a)
		toA.Store(0)
		toB.Store(0)
		r := runEngines(t, `
target: http://stampede-dns-change.test:`+strconv.Itoa(port)+`
scenarios: {s: {steps: [{get: /, timeout: 2s}]}}
load: {grace: 3s, stages: [{duration: 1s, rate: 20/s}]}
`, engine)[0]
		total := r.Totals.Requests
		if r.Totals.Successful != total || toA.Load()+toB.Load() != total || toA.Load() < 5 {
			t.Fatalf("%s: %d requests (%v), %d answered by the first address and %d by the second",
				engine, total, r.Totals.ByClass, toA.Load(), toB.Load())
		}
		switch engine {
		case EngineGoroutines:
			if toB.Load() == 0 {
				t.Errorf("goroutines: all %d requests went to the first address after the name moved", total)
			}
		case EngineLoop:
			if toB.Load() != 0 {
				t.Errorf("loop: %d of %d requests went to the second address; it resolves once per run", toB.Load(), total)
			}
		}
		t.Logf("%s: %d requests, %d to the first address, %d to the second", engine, total, toA.Load(), toB.Load())
	}
}
