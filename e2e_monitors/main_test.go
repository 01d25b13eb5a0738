// Package e2e_monitors runs the real stampede binary with server monitors
// against real servers on 127.0.0.1: the demo target backed by PostgreSQL
// (from .ci/services.sh), a Redis server each test starts and kills
// itself, and in-process HTTP targets.
//
// Tests that need PostgreSQL or redis-server skip when they are missing on
// a developer's machine, and fail in CI (CI=true), where .ci/run starts
// them first and a skip would hide that the monitors went untested.
package e2e_monitors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-load/stampede/internal/result"
)

var (
	bin     string
	modRoot string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		fmt.Fprintln(os.Stderr, "e2e_monitors: cannot find go.mod:", err)
		return 1
	}
	modRoot = filepath.Dir(strings.TrimSpace(string(out)))
	dir, err := os.MkdirTemp("", "stampede-e2e-monitors-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e_monitors:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "stampede")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/stampede")
	cmd.Dir = modRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e_monitors: go build ./cmd/stampede: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// outcome is what one finished stampede process left behind.
type outcome struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout ---\n%s--- stderr ---\n%s", o.code, o.elapsed.Round(time.Millisecond), o.stdout, o.stderr)
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

// stampede runs the binary in the module root with extra environment and
// fails the test if it does not end within limit.
func stampede(t *testing.T, limit time.Duration, env []string, args ...string) outcome {
	t.Helper()
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = modRoot
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(append(os.Environ(), "STAMPEDE_DEBUG="), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	o := outcome{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("stampede %s did not end within %v\n%s", strings.Join(args, " "), limit, o)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	default:
		t.Fatalf("stampede: %v\n%s", err, o)
	}
	return o
}

// unavailable skips on a developer's machine and fails in CI.
func unavailable(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not available in CI (.ci/services.sh should have provided it): %v", what, err)
	}
	t.Skipf("%s not available (run .ci/services.sh): %v", what, err)
}

// testPG is the PostgreSQL URL .ci/services.sh sets up, or
// STAMPEDE_TEST_PG; the test skips (fails in CI) when it cannot connect.
func testPG(t *testing.T) string {
	t.Helper()
	u := os.Getenv("STAMPEDE_TEST_PG")
	if u == "" {
		u = "postgres://stampede:stampede@127.0.0.1:5432/stampede?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		unavailable(t, "PostgreSQL", err)
	}
	c.Close(ctx)
	return u
}

// freePort is a loopback port nothing listens on (a moment ago).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// redisServer starts a redis-server of the test's own on a free port, so
// the test may kill it; it is killed at cleanup in any case.
func redisServer(t *testing.T) (addr string, kill func()) {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server", err)
	}
	port := freePort(t)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	t.Cleanup(kill)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr, kill
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// target is an in-process HTTP target that counts requests.
func target(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// writePlan writes a plan into a temp dir and returns its path.
func writePlan(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readResult(t *testing.T, path string) *result.Result {
	t.Helper()
	r, err := result.Read(path)
	if err != nil {
		t.Fatalf("result %s: %v", path, err)
	}
	return r
}

// window is a series' values with t in [from, to].
func window(s result.MonitorSeries, from, to float64) []float64 {
	var out []float64
	for i, t := range s.T {
		if t >= from && t <= to {
			out = append(out, s.V[i])
		}
	}
	return out
}

func maxOf(vs []float64) float64 {
	m := 0.0
	for i, v := range vs {
		if i == 0 || v > m {
			m = v
		}
	}
	return m
}

func threshold(t *testing.T, r *result.Result, expr string) result.Threshold {
	t.Helper()
	for _, th := range r.Thresholds {
		if th.Expr == expr {
			return th
		}
	}
	t.Fatalf("no threshold %q in %+v", expr, r.Thresholds)
	return result.Threshold{}
}
