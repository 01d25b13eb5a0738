package signalr

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/philippseith/signalr"
)

// TestIdleMemory measures what one idle hub connection costs this process:
// N connections to a philippseith hub running in a child process (so the
// server's memory is not in our RSS), each joined to a group, then idle.
// It reports and does not assert: figures depend on the machine.
//
//	STAMPEDE_MEMTEST=2000 go test -run TestIdleMemory -v ./internal/proto/signalr/
//
// STAMPEDE_MEMTEST_PROTOCOL=messagepack and STAMPEDE_MEMTEST_TRANSPORT=sse
// measure the other hub protocol and transport (the hub serves
// WebSockets and SSE).
func TestIdleMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STAMPEDE_MEMTEST"))
	if n <= 0 {
		t.Skip("set STAMPEDE_MEMTEST=N to measure N idle connections")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHubProcess$")
	cmd.Env = append(os.Environ(), "STAMPEDE_HUB_PROCESS=1")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	hub := "http://" + strings.TrimSpace(line) + "/hubs/kitchen"

	o := &Options{HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}, Stats: NewStats("OrderPlaced"),
		Protocol: ProtocolNamed(os.Getenv("STAMPEDE_MEMTEST_PROTOCOL")), Transport: TransportNamed(os.Getenv("STAMPEDE_MEMTEST_TRANSPORT"))}
	if o.Transport != WebSockets {
		// Measured with the streams' own client, as runs use it.
		o.HTTPClient = nil
	}
	ctx := context.Background()
	// Warm up pools and the runtime, then take the baseline.
	for i := 0; i < 16; i++ {
		c, err := Connect(ctx, hub, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	o.CloseIdleConnections()
	if os.Getenv("STAMPEDE_MEMPROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	rss0, heap0, stack0, g0 := measure()

	conns := make([]*Conn, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := Connect(ctx, hub, nil, o)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if _, err := c.Invoke(ctx, "JoinRestaurant", strconv.Itoa(i%100)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	took := time.Since(start)
	o.CloseIdleConnections()
	time.Sleep(2 * time.Second)
	rss1, heap1, stack1, g1 := measure()
	per := func(a, b int64) int64 { return (b - a) / int64(n) }
	t.Logf("%s over %s: %d idle connections (connected in %v): RSS %d B/conn, Go heap %d B/conn, stacks %d B/conn, %.2f goroutines/conn, open %d",
		o.Protocol, o.Transport, n, took.Round(time.Millisecond), per(rss0, rss1), per(heap0, heap1), per(stack0, stack1),
		float64(g1-g0)/float64(n), o.Stats.Open.Load())
	if p := os.Getenv("STAMPEDE_MEMPROFILE"); p != "" {
		runtime.GC()
		f, _ := os.Create(p)
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	for _, c := range conns {
		c.Abort()
	}
}

func measure() (rss, heap, stack int64, goroutines int) {
	for i := 0; i < 3; i++ {
		// Several cycles: stacks grown during connect shrink only at GC.
		runtime.GC()
	}
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			fmt.Sscanf(strings.TrimSpace(l[len("VmRSS:"):]), "%d", &rss)
			rss *= 1024
		}
	}
	return rss, int64(ms.HeapInuse), int64(ms.StackInuse), runtime.NumGoroutine()
}

// TestHubProcess is the child of TestIdleMemory: a kitchen hub on a
// loopback port, printed on stdout, until stdin closes.
func TestHubProcess(t *testing.T) {
	if os.Getenv("STAMPEDE_HUB_PROCESS") == "" {
		t.Skip("child process of TestIdleMemory")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := signalr.NewServer(ctx, signalr.SimpleHubFactory(&kitchen{}),
		signalr.Logger(hubLogger(), false), signalr.KeepAliveInterval(15*time.Second), signalr.TimeoutInterval(60*time.Second),
		// Its default of 1,000 pending negotiations counts v1 tokens until
		// the reaper runs, so a fast ramp gets 429s; 0 is no limit.
		signalr.MaxNegotiationConnections(0))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.MapHTTP(signalr.WithHTTPServeMux(mux), "/hubs/kitchen")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	go http.Serve(ln, mux)
	bufio.NewReader(os.Stdin).ReadString('\n')
	ln.Close()
}
