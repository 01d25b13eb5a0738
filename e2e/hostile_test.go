package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/result"
)

// hostileRSSLimit is the memory stampede may use against any hostile server
// in this suite, with hostileUsers users: docs/explanations/numbers.md's table states it.
const (
	hostileRSSLimit = 200 << 20
	hostileUsers    = 10
)

// runMeasured runs the real binary on plan and returns its result and peak
// RSS. The run is bounded by its plan (stages of a second or two) and by a
// wall-clock limit that only a hang reaches.
func runMeasured(t *testing.T, plan string) (*result.Result, int64, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2etest.Bin, "run", plan, "-o", out)
	cmd.Dir = e2etest.ModRoot
	cmd.Env = append(cmd.Environ(), "STAMPEDE_DEBUG=")
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("stampede did not finish within 90s (a hang):\n%s", b)
	}
	if err != nil {
		t.Fatalf("stampede: %v\n%s", err, b)
	}
	// The peak is what the run measured of its own memory (VmHWM), not the
	// child's rusage: a child started by vfork and exec inherits this test
	// process's high-water mark, which grows with the tests beside it.
	res := e2etest.ReadResult(t, out)
	return res, res.Generator.MaxRSS, string(b)
}

// sampleOf returns the error samples of one class, joined.
func samplesOf(res *result.Result, class string) string {
	var msgs []string
	for _, s := range res.Samples {
		if s.Class == class {
			msgs = append(msgs, s.Message)
		}
	}
	return strings.Join(msgs, " | ")
}

// TestHostileServers runs stampede against each hostile HTTP server of
// internal/hostile: for each, stampede ends on time, stays under
// hostileRSSLimit, counts every request in the class docs/explanations/numbers.md's
// "Hostile servers" table says, and the counts add up (requests = ok +
// failed by class, in totals, steps and series). The runs are sequential:
// ten stampede processes at once would measure the machine, not stampede.
func TestHostileServers(t *testing.T) {
	// A 2 MiB request body: far more than a server that never reads lets
	// the kernel buffer.
	bigBody := strings.Repeat("p", 2<<20)
	cases := []struct {
		name   string
		srv    func(testing.TB) *hostile.Server
		step   string
		class  string // every request's class
		sample string // in that class's error samples ("" for ok)
	}{
		{"endless headers", hostile.EndlessHeaders, `{name: s, get: /, timeout: 5s}`, "other", "response header block longer than 65536 bytes (http.max_header_bytes)"},
		{"huge header line", hostile.HugeHeaderLine, `{name: s, get: /, timeout: 5s}`, "other", "response header block longer than 65536 bytes"},
		{"short content-length", hostile.ShortContentLength, `{name: s, get: /, timeout: 5s}`, "other", "bytes follow the end of the answer"},
		{"long content-length", hostile.LongContentLength, `{name: s, get: /, timeout: 5s}`, "conn_reset", "unexpected EOF"},
		{"101 to a GET", hostile.Upgrade101, `{name: s, get: /, timeout: 5s}`, "other", "101 Switching Protocols to a request that asked for no upgrade"},
		{"garbage", hostile.Garbage, `{name: s, get: /, timeout: 5s}`, "other", "bad status line"},
		{"endless chunked body", hostile.EndlessChunked, `{name: s, get: /, timeout: 1s, capture: {x: {regex: "never-there"}}}`, "timeout", "timeout"},
		{"gzip bomb", hostile.GzipBomb, `{name: s, get: /, timeout: 10s, headers: {Accept-Encoding: gzip}, capture: {x: {regex: "^.{4}"}}}`, "ok", ""},
		{"slowloris", func(t testing.TB) *hostile.Server { return hostile.Slowloris(t, 50*time.Millisecond) }, `{name: s, get: /, timeout: 1s}`, "timeout", "timeout"},
		{"never reads", hostile.NeverReads, `{name: s, post: /, timeout: 1s, body: "` + bigBody + `"}`, "timeout", "timeout"},
		{"reset mid-body", hostile.ResetMidBody, `{name: s, get: /, timeout: 5s}`, "conn_reset", "connection reset"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.srv(t)
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: hostile
target: %s
scenarios:
  s:
    steps:
      - %s
      - think: 20ms
load:
  stages: [{duration: 2s, users: %d}]
  grace: 3s
`, srv.URL, tc.step, hostileUsers), nil)
			res, rss, out := runMeasured(t, plan)
			checkSums(t, res)
			tt := res.Totals
			if tt.Requests == 0 {
				t.Fatalf("no requests:\n%s", out)
			}
			got := tt.ByClass[tc.class]
			if tc.class == "ok" {
				got = tt.Successful
			}
			if got != tt.Requests {
				var classes []string
				for c, n := range tt.ByClass {
					classes = append(classes, fmt.Sprintf("%s=%d", c, n))
				}
				sort.Strings(classes)
				t.Errorf("requests %d, ok %d, failed %v: want every request %s\nsamples: %+v", tt.Requests, tt.Successful, classes, tc.class, res.Samples)
			}
			if tc.sample != "" && !strings.Contains(samplesOf(res, tc.class), tc.sample) {
				t.Errorf("%s samples %q, want them to say %q", tc.class, samplesOf(res, tc.class), tc.sample)
			}
			if rss > hostileRSSLimit {
				t.Errorf("peak RSS %d MB with %d users, over the %d MB bound", rss>>20, hostileUsers, hostileRSSLimit>>20)
			}
			t.Logf("%s: %d requests, all %s, peak RSS %d MB", tc.name, tt.Requests, tc.class, rss>>20)
		})
	}
}

// TestCaptureFromBigBody: 50 users capturing from a 9.4 MB body keep only
// the body's first http.max_kept_body_bytes (1 MiB by default) each, so
// stampede stays under 200 MB (before the cap each kept 8 MiB: 737 MB in
// the run). A capture past the cap is a capture failure that says
// why and what to raise; raising the cap finds it.
func TestCaptureFromBigBody(t *testing.T) {
	const size = 9_400_000
	srv := hostile.BigBody(t, size, "TAIL-MARK")
	plan := func(extra, capture string, users int) string {
		return e2etest.WritePlan(t, fmt.Sprintf(`name: big
target: %s
%s
scenarios:
  s:
    steps:
      - {name: head, get: /, timeout: 20s, capture: {h: {regex: "^(bbbb)"}}}
      - {name: tail, get: /, timeout: 20s, capture: {m: {regex: "%s"}}}
load:
  stages: [{duration: 2s, users: %d}]
  grace: 20s
`, srv.URL, extra, capture, users), nil)
	}

	res, rss, out := runMeasured(t, plan("", "TAIL-MARK", 50))
	checkSums(t, res)
	head, tail := stepOf(t, res, "s", "head"), stepOf(t, res, "s", "tail")
	if head.Requests == 0 || head.Successful != head.Requests {
		t.Errorf("head capture: %d requests, %d ok (%v):\n%s", head.Requests, head.Successful, head.ByClass, out)
	}
	if tail.Requests == 0 || tail.ByClass["capture"] != tail.Requests {
		t.Errorf("tail capture past the cap: %d requests, by class %v, want all capture", tail.Requests, tail.ByClass)
	}
	if s := samplesOf(res, "capture"); !strings.Contains(s, `capture "m" found nothing (in the first 1048576 of the body's 9400000 bytes: raise http.max_kept_body_bytes`) {
		t.Errorf("capture samples %q: want them to name the cap", s)
	}
	if rss > 200<<20 {
		t.Errorf("peak RSS %d MB for 50 users capturing from a 9.4 MB body, over 200 MB", rss>>20)
	}
	t.Logf("default cap: peak RSS %d MB, %d + %d requests", rss>>20, head.Requests, tail.Requests)

	// A cap the body fits in finds the tail. (Fewer users would hold less,
	// but this is about the capture, not the memory.)
	res, _, out = runMeasured(t, plan("http: {max_kept_body_bytes: 10MB}", "TAIL-MARK", 5))
	checkSums(t, res)
	if tail := stepOf(t, res, "s", "tail"); tail.Requests == 0 || tail.Successful != tail.Requests {
		t.Errorf("with a 10 MB cap the tail capture: %d requests, %d ok (%v):\n%s", tail.Requests, tail.Successful, tail.ByClass, out)
	}
}

// TestClientCertRequired: an HTTPS server (HTTP/2 on, TLS 1.3) that wants
// a client certificate we do not give passes the start's TLS check (our
// side of the handshake completes) and then refuses every request with an
// alert: each is counted `tls`, not `other` or `conn_reset` as before.
func TestClientCertRequired(t *testing.T) {
	url := hostile.ClientCertRequired(t, tls.VersionTLS13)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: mtls
target: %s
tls: {insecure: true}
scenarios:
  s:
    steps:
      - {name: s, get: /, timeout: 5s}
      - think: 20ms
load:
  stages: [{duration: 1s, users: %d}]
`, url, hostileUsers), nil)
	res, _, out := runMeasured(t, plan)
	checkSums(t, res)
	tt := res.Totals
	if tt.Requests == 0 || tt.ByClass["tls"] != tt.Requests {
		t.Fatalf("requests %d, by class %v: want every request tls\n%s", tt.Requests, tt.ByClass, out)
	}
	if s := samplesOf(res, "tls"); !strings.Contains(s, "certificate") {
		t.Errorf("tls samples %q: want them to mention the certificate", s)
	}
}
