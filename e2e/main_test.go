// Package e2e runs the real stampede binary against real servers on
// 127.0.0.1 that the tests start in-process, and checks what it prints, the
// exit code and the result file.
//
// The binary is built once in TestMain. Set STAMPEDE_E2E_RACE=1 to build it
// with the race detector (much slower; raise -timeout).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

var (
	// bin is the stampede binary built by TestMain.
	bin string
	// modRoot is the module root (where go.mod is).
	modRoot string
	// shared is a directory that lives as long as the test binary, for
	// results more than one test reads.
	shared string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot find the module root:", err)
		return 1
	}
	modRoot = root
	dir, err := os.MkdirTemp("", "stampede-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	shared = dir
	bin = filepath.Join(dir, "stampede")
	args := []string{"build", "-o", bin}
	if os.Getenv("STAMPEDE_E2E_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/stampede")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/stampede: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot asks the go command for go.mod, and walks up from the test's
// directory when that fails.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err == nil {
		if p := strings.TrimSpace(string(out)); p != "" && p != os.DevNull {
			return filepath.Dir(p), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}

// ---------------------------------------------------------------------------
// Running the binary.

// outcome is what one finished stampede process left behind.
type outcome struct {
	code    int
	stdout  string
	stderr  string
	elapsed time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout ---\n%s--- stderr ---\n%s", o.code, o.elapsed.Round(time.Millisecond), o.stdout, o.stderr)
}

// stampede runs the binary with args in dir (the module root when empty)
// and fails the test if it does not end within limit.
func stampede(t *testing.T, limit time.Duration, dir string, args ...string) outcome {
	t.Helper()
	p := start(t, dir, args...)
	return p.wait(t, limit)
}

// proc is a running stampede process.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	started        time.Time
	done           chan struct{}
	err            error
}

func start(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	if dir == "" {
		dir = modRoot
	}
	p := &proc{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(os.Environ(), "STAMPEDE_DEBUG=")
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start stampede: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to end, killing it and failing the test after
// limit.
func (p *proc) wait(t *testing.T, limit time.Duration) outcome {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump helps
		time.Sleep(200 * time.Millisecond)
		p.cmd.Process.Kill()
		<-p.done
		o := p.outcome()
		t.Fatalf("stampede %s did not end within %v\n%s", strings.Join(p.cmd.Args[1:], " "), limit, o)
	}
	o := p.outcome()
	if p.err != nil {
		var ee *exec.ExitError
		if !errors.As(p.err, &ee) {
			t.Fatalf("stampede: %v\n%s", p.err, o)
		}
	}
	return o
}

func (p *proc) outcome() outcome {
	o := outcome{stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.started)}
	if p.cmd.ProcessState != nil {
		o.code = p.cmd.ProcessState.ExitCode()
	}
	return o
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ---------------------------------------------------------------------------
// Plans and results.

// writePlan writes a plan (and any extra files, name → content) to a fresh
// directory and returns the plan's path.
func writePlan(t *testing.T, yaml string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readResult(t *testing.T, path string) *result.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read result: %v", err)
	}
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result %s is not valid JSON: %v\n%.2000s", path, err, b)
	}
	if res.Schema != result.Schema {
		t.Errorf("schema = %q, want %q", res.Schema, result.Schema)
	}
	return &res
}

// stepOf returns the step of the given scenario and name (name "" matches
// the scenario's only step).
func stepOf(t *testing.T, res *result.Result, scenario, name string) result.Step {
	t.Helper()
	for _, s := range res.Steps {
		if s.Scenario == scenario && (name == "" || s.Name == name) {
			return s
		}
	}
	var have []string
	for _, s := range res.Steps {
		have = append(have, s.Scenario+"/"+s.Name)
	}
	t.Fatalf("no step %s/%s in the result; have %v", scenario, name, have)
	return result.Step{}
}

// checkSums checks what holds for every complete result: failures by class
// sum to failed, and successful + failed = requests, in the totals and in
// every step, and the steps sum to the totals.
func checkSums(t *testing.T, res *result.Result) {
	t.Helper()
	check := func(what string, req, ok, failed int64, by map[string]int64) {
		var sum int64
		for _, n := range by {
			sum += n
		}
		if sum != failed {
			t.Errorf("%s: by_class sums to %d, failed = %d (%v)", what, sum, failed, by)
		}
		if ok+failed != req {
			t.Errorf("%s: successful %d + failed %d != requests %d", what, ok, failed, req)
		}
	}
	tt := res.Totals
	check("totals", tt.Requests, tt.Successful, tt.Failed, tt.ByClass)
	var req, ok, failed int64
	for _, s := range res.Steps {
		check("step "+s.Scenario+"/"+s.Name, s.Requests, s.Successful, s.Failed, s.ByClass)
		req += s.Requests
		ok += s.Successful
		failed += s.Failed
	}
	if req != tt.Requests || ok != tt.Successful || failed != tt.Failed {
		t.Errorf("steps sum to requests/ok/failed %d/%d/%d, totals say %d/%d/%d", req, ok, failed, tt.Requests, tt.Successful, tt.Failed)
	}
	if !res.Run.Partial {
		checkSeries(t, res)
	}
}

// checkSeries checks that the per-interval series of a complete result add
// up to its totals: every request lands in exactly one interval.
func checkSeries(t *testing.T, res *result.Result) {
	t.Helper()
	s := res.Series
	n := len(s.T)
	if n == 0 {
		t.Errorf("series: no intervals")
		return
	}
	lens := map[string]int{"started": len(s.Started), "completed": len(s.Completed), "ok": len(s.OK),
		"p50_us": len(s.P50US), "p95_us": len(s.P95US), "p99_us": len(s.P99US), "active": len(s.Active),
		"in_flight": len(s.InFlight), "dropped": len(s.Dropped), "lag_p99_us": len(s.LagP99US), "target": len(s.Target)}
	for c, col := range s.Failed {
		lens["failed."+c] = len(col)
	}
	for name, l := range lens {
		if l != n {
			t.Errorf("series: %s has %d values, t has %d", name, l, n)
		}
	}
	sum := func(v []int64) (x int64) {
		for _, e := range v {
			x += e
		}
		return x
	}
	tt := res.Totals
	if got := sum(s.OK); got != tt.Successful {
		t.Errorf("series: ok sums to %d, totals.successful = %d", got, tt.Successful)
	}
	for c, want := range tt.ByClass {
		if got := sum(s.Failed[c]); got != want {
			t.Errorf("series: failed.%s sums to %d, totals.by_class = %d", c, got, want)
		}
	}
	for c, col := range s.Failed {
		if got := sum(col); got != tt.ByClass[c] {
			t.Errorf("series: failed.%s sums to %d, totals.by_class = %d", c, got, tt.ByClass[c])
		}
	}
	if got := sum(s.Dropped); got != tt.ByClass["dropped"] {
		t.Errorf("series: dropped sums to %d, totals.by_class.dropped = %d", got, tt.ByClass["dropped"])
	}
	unfinished := tt.ByClass["dropped"] + tt.ByClass["interrupted"]
	if got := sum(s.Completed); got != tt.Requests-unfinished {
		t.Errorf("series: completed sums to %d, want requests %d − dropped/interrupted %d", got, tt.Requests, unfinished)
	}
}

// summaryInt reads "Label: N" from a text summary.
func summaryInt(t *testing.T, text, label string) int64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(label) + `\s+(\d+)`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("summary has no %q line:\n%s", label, text)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// ---------------------------------------------------------------------------
// Servers. Every one listens on 127.0.0.1 only and is closed in t.Cleanup.

// counter counts requests by key.
type counter struct {
	mu sync.Mutex
	m  map[string]*atomic.Int64
}

func newCounter(keys ...string) *counter {
	c := &counter{m: map[string]*atomic.Int64{}}
	for _, k := range keys {
		c.m[k] = new(atomic.Int64)
	}
	return c
}

func (c *counter) add(key string) {
	c.mu.Lock()
	n, ok := c.m[key]
	if !ok {
		n = new(atomic.Int64)
		c.m[key] = n
	}
	c.mu.Unlock()
	n.Add(1)
}

func (c *counter) get(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.m[key]; ok {
		return n.Load()
	}
	return 0
}

// httpServer starts h on a loopback port; it is closed when the test ends.
func httpServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// statusServer answers by path: /ok 200, /limited 429, /unavailable 503,
// /missing 404, anything else 200; it counts requests by path.
func statusServer(t *testing.T) (*httptest.Server, *counter) {
	srv, c := statusServerNoCleanup()
	t.Cleanup(srv.Close)
	return srv, c
}

// statusServerNoCleanup is statusServer for a caller that closes it.
func statusServerNoCleanup() (*httptest.Server, *counter) {
	c := newCounter("/ok", "/limited", "/unavailable", "/missing")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.URL.Path)
		code := http.StatusOK
		switch r.URL.Path {
		case "/limited":
			code = http.StatusTooManyRequests
		case "/unavailable":
			code = http.StatusServiceUnavailable
		case "/missing":
			code = http.StatusNotFound
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		fmt.Fprintln(w, http.StatusText(code))
	}))
	return srv, c
}

// hangServer holds every request until the client goes away, the test
// ends, or 10s pass. It counts the requests it saw.
func hangServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		tm := time.NewTimer(10 * time.Second)
		defer tm.Stop()
		select {
		case <-r.Context().Done():
		case <-release:
		case <-tm.C:
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv, &seen
}

// resetServer accepts connections, reads one request head and then resets
// the connection (SO_LINGER 0). It counts the heads it read.
func resetServer(t *testing.T) (addr string, seen *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen = new(atomic.Int64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by cleanup
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				tc := c.(*net.TCPConn)
				defer tc.Close()
				tc.SetReadDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(tc)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" || line == "\n" {
						break
					}
				}
				seen.Add(1)
				tc.SetLinger(0)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), seen
}

// stallServer answers "ok" at once except in the last `stall` of every
// `period` (counted from its start): a request arriving then is held until
// the stall ends. See /work/shared/bench/targets/stall.
func stallServer(t *testing.T, period, stall time.Duration) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	var t0 time.Time
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		phase := time.Since(t0) % period
		if phase >= period-stall {
			time.Sleep(period - phase)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok"))
	}))
	t0 = time.Now()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &seen
}

// closedPort returns a loopback port that was just listened on and closed,
// so nothing listens there. It is picked below the ephemeral range
// (32768..60999 on Linux), so no other test's listener or outgoing
// connection gets it in the meantime.
func closedPort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatal("no free port in 20000..32000")
	return 0
}
