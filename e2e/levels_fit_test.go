package e2e

import (
	"context"
	"crypto/tls"
	"encoding/pem"
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

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestLevelsPastOpenFilesRefused: a level of gates or sweep past the
// open-files limit is refused before any load, naming the level. Before,
// only the plan's own stages were checked, so gates ran users 100 and then
// ran out of file descriptors at the last level; validate said ok.
func TestLevelsPastOpenFilesRefused(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  stages:
    - {duration: 1s, users: 0}
gates:
  vary: users
  levels: [100, 1000000000]
  hold: 1s
  slo: ["error_rate < 5%%"]
`, srv.URL), nil)
	for _, args := range [][]string{
		{"validate", plan},
		{"gates", plan, "-q", "-o", filepath.Join(t.TempDir(), "g.json")},
		{"sweep", plan, "--users", "100,1000000000", "--hold", "1s", "-q", "-o", filepath.Join(t.TempDir(), "s.json")},
	} {
		o := e2etest.Stampede(t, 60*time.Second, "", args...)
		if o.Code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", args[0], o.Code, o)
			continue
		}
		// "--workers N", or for a count no number of workers holds,
		// "more than ... processes would be needed".
		for _, w := range []string{"level users 1000000k", "1,000,000,000 users need", "open-files limit", "processes", plan + ":8:"} {
			if !strings.Contains(o.Stderr, w) {
				t.Errorf("%s: stderr lacks %q\n%s", args[0], w, o)
			}
		}
		if strings.Contains(o.Stderr, "level users 100:") || strings.Contains(o.Stderr, "level users 100 ") {
			t.Errorf("%s: the level that fits was named\n%s", args[0], o)
		}
	}
	// capacity: every rate holds the same connections, here a WebSocket
	// population no process can hold beside the HTTP load.
	capPlan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
  feed: {users: 1000000000, websocket: {url: /feed, steps: [{hold: run}]}}
load:
  stages:
    - {duration: 1s, users: 1}
`, srv.URL), nil)
	o := e2etest.Stampede(t, 60*time.Second, "", "capacity", capPlan, "--slo", "p95 < 1s", "--step-hold", "1s", "-q",
		"-o", filepath.Join(t.TempDir(), "c.json"))
	if o.Code != 2 || !strings.Contains(o.Stderr, "level rate 10/s") || !strings.Contains(o.Stderr, "1,000,000,000 persistent connections") {
		t.Errorf("capacity: want exit 2 naming the level and the connections\n%s", o)
	}
	if n := srv.total(); n != 0 {
		t.Errorf("%d requests reached the target; every refusal must come before any load", n)
	}
}

// TestDefaultMaxInFlightLoweredSaysSo: under an open-files limit of 1024
// (set with prlimit) the default max_in_flight of 10,000 is lowered to
// 768, and validate and run say so in one line on stderr. Before, it was
// lowered silently, and the drops it caused had no explanation.
func TestDefaultMaxInFlightLoweredSaysSo(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("needs prlimit (util-linux) to lower the open-files limit of the run")
	}
	srv := newSeenServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  grace: 1s
  stages:
    - {duration: 1s, rate: 5/s}
`, srv.URL), nil)
	const want = "max_in_flight lowered from 10,000 to 768 to fit the open-files limit (RLIMIT_NOFILE 1,024); set it in the plan to choose\n"
	for _, args := range [][]string{
		{"validate", plan},
		{"run", plan, "-q", "-o", filepath.Join(t.TempDir(), "r.json")},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, prlimit, append([]string{"--nofile=1024:1024", "--", e2etest.Bin}, args...)...)
		cmd.Dir = e2etest.ModRoot
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Errorf("%s: %v\n%s", args[0], err, stderr.String())
			continue
		}
		if strings.Count(stderr.String(), want) != 1 {
			t.Errorf("%s: stderr lacks one line %q:\n%s", args[0], want, stderr.String())
		}
	}
	// Where the limit leaves room for the default, nothing is said.
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Max >= 10000+256 {
		o := e2etest.Stampede(t, 60*time.Second, "", "validate", plan)
		if o.Code != 0 || strings.Contains(o.Stderr, "lowered") {
			t.Errorf("validate under the test's own limit:\n%s", o)
		}
	}
}

// TestHTTPSMaxConnectionsPerHost: max_connections_per_host bounds HTTPS
// connections as it does plain HTTP ones; the plan check counts on it.
// Before, net/http had no MaxConnsPerHost, so 20 users opened 20
// connections to a TLS target capped at 2.
func TestHTTPSMaxConnectionsPerHost(t *testing.T) {
	t.Parallel()
	var conns, reqs atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		// Each request holds its connection a while, so 20 users want
		// 20 connections at once.
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("ok"))
	}))
	// Connections that served a request: the run's preflight opens one
	// more to check the TLS handshake, which carries no request.
	var served sync.Map
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s != http.StateActive {
			return
		}
		if _, seen := served.LoadOrStore(c, true); !seen {
			conns.Add(1)
		}
	}
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
tls: {ca_file: ca.pem}
http: {max_connections_per_host: 2}
scenarios:
  s: {steps: [{get: /ok}]}
load:
  grace: 2s
  stages:
    - {duration: 2s, users: 20}
`, srv.URL), map[string]string{"ca.pem": string(ca)})
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 90*time.Second, "", "run", plan, "-q", "-o", out)
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no result: %v\n%s", err, o)
	}
	if reqs.Load() == 0 {
		t.Fatalf("no request reached the target\n%s", o)
	}
	if n := conns.Load(); n > 2 {
		t.Errorf("%d TLS connections opened under max_connections_per_host: 2 (%d requests)\n%s", n, reqs.Load(), o)
	}
}

// TestLevelsRefusalNamesTheLargestLevel: under an open-files limit of
// 1024 (set with prlimit), a sweep of 100, 2,000 and 5,000 users was
// refused with the figures of the first level past it (2,000), and told
// to use --workers, which sweep did not take. The refusal now gives the
// largest level's count and the workers it needs, and sweep takes them.
func TestLevelsRefusalNamesTheLargestLevel(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("needs prlimit (util-linux) to lower the open-files limit of the run")
	}
	srv := newSeenServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  stages:
    - {duration: 1s, users: 1}
`, srv.URL), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prlimit, "--nofile=1024:1024", "--", e2etest.Bin, "sweep", plan, "--users", "100,2000,5000",
		"--hold", "1s", "-q", "-o", filepath.Join(t.TempDir(), "s.json"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("err %v, want exit 2\n%s", err, stderr.String())
	}
	// 5,000 users in processes of 1,024 - 256 files: 7.
	for _, w := range []string{"level users 5000", "5,000 users need", "processes with --workers 7 "} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q\n%s", w, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "2,000 users") {
		t.Errorf("the refusal names a smaller level\n%s", stderr.String())
	}
	// The advice is a flag sweep takes (it did not: "unknown flag").
	if h := e2etest.Stampede(t, 30*time.Second, "", "sweep", "--help"); !strings.Contains(h.Stdout, "--workers") {
		t.Errorf("sweep --help has no --workers\n%s", h)
	}
	if n := srv.total(); n != 0 {
		t.Errorf("%d requests reached the target", n)
	}
}
