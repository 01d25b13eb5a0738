// Package monitors runs the real stampede binary with server monitors
// against real servers on 127.0.0.1: the demo target backed by PostgreSQL
// (from .ci/services.sh), a Redis server each test starts and kills
// itself, and in-process HTTP targets.
//
// Tests that need PostgreSQL or redis-server skip when they are missing on
// a developer's machine, and fail in CI (CI=true), where .ci/run starts
// them first and a skip would hide that the monitors went untested.
package monitors

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-load/stampede/internal/result"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/monitors")) }

// stampede runs the binary in the module root with extra environment and
// fails the test if it does not end within limit.
func stampede(t *testing.T, limit time.Duration, env []string, args ...string) e2etest.Outcome {
	t.Helper()
	return e2etest.Start(t, "", env, args...).Wait(t, limit)
}

func writePlan(t *testing.T, src string) string {
	t.Helper()
	return e2etest.WritePlan(t, src, nil)
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

// redisServer starts a redis-server of the test's own on a free port, so
// the test may kill it; it is killed at cleanup in any case.
func redisServer(t *testing.T) (addr string, kill func()) {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server", err)
	}
	port := e2etest.FreePort(t)
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
