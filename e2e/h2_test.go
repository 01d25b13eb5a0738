package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
)

// TestH2HostileServers runs the binary against each hostile HTTP/2 server
// (h2c, and h2 over TLS for two): every request is counted in its class
// with the server's reason, the server read exactly the requests the
// result reports (before, net/http resent: 17,554 HEADERS for 40 reported
// requests against GOAWAY on every stream, 3 per request against
// REFUSED_STREAM, all reported as timeouts), and memory stays bounded.
func TestH2HostileServers(t *testing.T) {
	cases := []struct {
		name   string
		srv    func(testing.TB, bool) *hostile.H2Server
		tls    bool
		class  string
		sample string
	}{
		{"endless CONTINUATION", hostile.H2EndlessContinuation, false, "other", "response header block longer than 65536 bytes"},
		{"FLOW_CONTROL_ERROR", hostile.H2FlowControl, false, "other", "FLOW_CONTROL_ERROR"},
		{"PUSH_PROMISE", hostile.H2PushPromise, false, "other", "PUSH_PROMISE"},
		{"HPACK bomb", hostile.H2HPACKBomb, false, "other", "response header block longer than 65536 bytes"},
		{"GOAWAY on every stream", hostile.H2GoAwayEvery, false, "refused", "GOAWAY NO_ERROR"},
		{"GOAWAY on every stream over TLS", hostile.H2GoAwayEvery, true, "refused", "GOAWAY NO_ERROR"},
		{"REFUSED_STREAM", hostile.H2RefusedStream, false, "refused", "REFUSED_STREAM"},
		{"REFUSED_STREAM over TLS", hostile.H2RefusedStream, true, "refused", "REFUSED_STREAM"},
		{"SETTINGS flood", hostile.H2SettingsFlood, false, "other", "ENHANCE_YOUR_CALM"},
		{"PING flood", hostile.H2PingFlood, false, "other", "ENHANCE_YOUR_CALM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.srv(t, tc.tls)
			head := "http: {version: h2c}"
			if tc.tls {
				head = "http: {version: h2}\ntls: {insecure: true}"
			}
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: hostile-h2
target: %s
%s
scenarios:
  s:
    steps:
      - {name: s, get: /, timeout: 5s}
      - think: 20ms
load:
  stages: [{duration: 2s, users: %d}]
  grace: 3s
`, srv.URL, head, hostileUsers), nil)
			res, rss, out := runMeasured(t, plan)
			checkSums(t, res)
			tt := res.Totals
			if tt.Requests == 0 || tt.ByClass[tc.class] != tt.Requests {
				t.Fatalf("requests %d, by class %v: want every one %s\n%s", tt.Requests, tt.ByClass, tc.class, out)
			}
			if !strings.Contains(samplesOf(res, tc.class), tc.sample) {
				t.Errorf("%s samples %q, want them to say %q", tc.class, samplesOf(res, tc.class), tc.sample)
			}
			if got := srv.Requests(); got != tt.Requests {
				t.Errorf("the server read %d requests; the result says %d", got, tt.Requests)
			}
			if rss > hostileRSSLimit {
				t.Errorf("peak RSS %d MB, over the %d MB bound", rss>>20, hostileRSSLimit>>20)
			}
		})
	}
}

// TestH2NginxRotation: nginx over TLS with http2 and keepalive_requests 5
// sends GOAWAY with every 5th request of a connection. Every request the
// result counts is one nginx logged, and no other: before, the shared
// net/http pool stormed nginx with connections and reported hundreds of
// requests nginx never saw as timeouts. Skipped without nginx (CI installs
// it).
func TestH2NginxRotation(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed")
	}
	dir := t.TempDir()
	certPEM, keyPEM := hostile.SelfSignedPEM(t)
	os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 1024; }
http {
    access_log access.log;
    keepalive_requests 5;
    client_body_temp_path tmp;
    proxy_temp_path tmp;
    fastcgi_temp_path tmp;
    uwsgi_temp_path tmp;
    scgi_temp_path tmp;
    server {
        listen 127.0.0.1:%d ssl http2;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        location / { return 200 "hello\n"; }
    }
}
`, port)
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
	os.Mkdir(filepath.Join(dir, "tmp"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nginx, "-p", dir+"/", "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	var nout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &nout, &nout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if !waitListening(fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second) {
		t.Fatalf("nginx did not listen:\n%s", nout.String())
	}
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: h2rotate
target: https://127.0.0.1:%d
tls: {insecure: true}
http: {version: h2}
scenarios:
  s:
    steps:
      - {name: s, get: /, timeout: 10s}
load:
  stages: [{duration: 3s, users: 10}]
`, port), nil)
	res, _, out := runMeasured(t, plan)
	checkSums(t, res)
	time.Sleep(200 * time.Millisecond) // nginx logs after the answer is out
	log, err := os.ReadFile(filepath.Join(dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := int64(bytes.Count(log, []byte("\n")))
	if res.Totals.Requests == 0 || res.Totals.Successful != res.Totals.Requests {
		t.Fatalf("requests %d, ok %d, by class %v\n%s", res.Totals.Requests, res.Totals.Successful, res.Totals.ByClass, out)
	}
	if lines != res.Totals.Requests {
		t.Fatalf("nginx logged %d requests; the result says %d", lines, res.Totals.Requests)
	}
}

func waitListening(addr string, within time.Duration) bool {
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// TestH2SharedAutoOneConnection: shared HTTP/2 connections under version
// auto over https, 20 users, max_connections_per_host 4: the run opens one
// connection (the first request's ALPN probe, kept as the shared one) and
// every request succeeds. Before, each user's first dial was left idle
// beside the shared one (21 handshakes for 20 users), and with the cap of
// 4 the idle ones held every slot: no request was sent.
func TestH2SharedAutoOneConnection(t *testing.T) {
	srv := hostile.H2OK(t, true)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: shared-auto
target: %s
http: {h2_connections: shared, max_connections_per_host: 4}
tls: {insecure: true}
scenarios:
  s:
    steps:
      - {name: s, get: /, timeout: 5s}
      - think: 20ms
load:
  stages: [{duration: 2s, users: 20}]
  grace: 3s
`, srv.URL), nil)
	res, _, out := runMeasured(t, plan)
	checkSums(t, res)
	tt := res.Totals
	if tt.Requests == 0 || tt.Successful != tt.Requests {
		t.Fatalf("requests %d, successful %d, by class %v\n%s", tt.Requests, tt.Successful, tt.ByClass, out)
	}
	if got := srv.Requests(); got != tt.Requests {
		t.Errorf("the server read %d requests; the result says %d", got, tt.Requests)
	}
	// The run's preflight checks the target with a connection of its own.
	if got := srv.Conns(); got != 2 {
		t.Errorf("20 users in shared mode opened %d connections, want 1 (and the preflight's)", got)
	}
}
