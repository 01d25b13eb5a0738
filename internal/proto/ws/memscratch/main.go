package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
	"bufio"

	"github.com/coder/websocket"
)

func rss() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var n int64
			fmt.Sscanf(strings.TrimSpace(l[6:]), "%d", &n)
			return n * 1024
		}
	}
	return 0
}

func server() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	fmt.Println(ln.Addr().String())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		for {
			t, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			c.Write(context.Background(), t, b)
		}
	}))
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "server" {
		server()
		return
	}
	cmd := exec.Command(os.Args[0], "server")
	out, _ := cmd.StdoutPipe()
	cmd.Start()
	defer cmd.Process.Kill()
	addr, _ := bufio.NewReader(out).ReadString('\n')
	addr = strings.TrimSpace(addr)
	N := 2000
	hc := &http.Client{Transport: &http.Transport{ReadBufferSize: 512, WriteBufferSize: 512}}
	mode := os.Getenv("MODE")
	// warm
	var ms runtime.MemStats
	runtime.GC(); debug.FreeOSMemory()
	runtime.ReadMemStats(&ms)
	r0, h0, s0, g0 := rss(), ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
	conns := make([]*websocket.Conn, N)
	for i := 0; i < N; i++ {
		o := &websocket.DialOptions{}
		if mode == "small" {
			o.HTTPClient = hc
		}
		c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", o)
		if err != nil {
			panic(err)
		}
		conns[i] = c
		go func() {
			for {
				_, _, err := c.Read(context.Background())
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(time.Second)
	runtime.GC(); debug.FreeOSMemory()
	runtime.ReadMemStats(&ms)
	r1 := rss()
	fmt.Printf("mode=%s rss/conn=%d heap/conn=%d stack/conn=%d goroutines/conn=%.2f\n", mode, (r1-r0)/int64(N), (int64(ms.HeapInuse)-int64(h0))/int64(N), (int64(ms.StackInuse)-int64(s0))/int64(N), float64(runtime.NumGoroutine()-g0)/float64(N))
}
