//go:build linux

package ws

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

type floodCount struct {
	n    atomic.Int64
	done chan struct{}
	want int64
}

func (h *floodCount) Message(*Conn, MessageType, []byte) error {
	if h.n.Add(1) == h.want {
		close(h.done)
	}
	return nil
}
func (h *floodCount) Closed(*Conn, *Disconnect) *Disconnect { return nil }

// BenchmarkFloodTLS: one wss:// connection receives b.N 64-byte text
// messages written by the server in 64 KiB writes.
func BenchmarkFloodTLS(b *testing.B)   { floodBench(b, true) }
func BenchmarkFloodPlain(b *testing.B) { floodBench(b, false) }

func floodBench(b *testing.B, useTLS bool) {
	cert := httptest.NewUnstartedServer(nil)
	cert.StartTLS()
	cfg, roots := cert.TLS.Clone(), x509.NewCertPool()
	roots.AddCert(cert.Certificate())
	cert.Close()
	cfg.NextProtos = nil
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	l := net.Listener(ln)
	scheme := "ws://"
	if useTLS {
		l, scheme = tls.NewListener(ln, cfg), "wss://"
	}
	n := b.N
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		req, err := http.ReadRequest(bufio.NewReader(nc))
		if err != nil {
			return
		}
		h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		nc.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(h[:]) + "\r\n\r\n"))
		msg := append([]byte{0x81, 64}, make([]byte, 64)...)
		var buf []byte
		for i := 0; i < n; i++ {
			buf = append(buf, msg...)
			if len(buf) >= 64<<10 {
				nc.Write(buf)
				buf = buf[:0]
			}
		}
		nc.Write(buf)
		var one [1]byte
		nc.Read(one[:])
	}()
	h := &floodCount{done: make(chan struct{}), want: int64(n)}
	b.ResetTimer()
	c, err := Dial(context.Background(), scheme+ln.Addr().String()+"/", nil, &Options{TLS: &tls.Config{RootCAs: roots}}, h)
	if err != nil {
		b.Fatal(err)
	}
	<-h.done
	b.StopTimer()
	c.Abort()
}
