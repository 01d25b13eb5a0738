package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/result"
)

// connMemoryBound is what stampede may take, at its peak, holding 10
// connections to a hostile hub for a couple of seconds: the process's
// whole resident set, runtime included. Far above what it takes (a flood
// is read message by message, never queued), far below what an unbounded
// queue of a few seconds of flood would take.
const connMemoryBound = 200 << 20

// runMeasuredConn runs the binary like e2etest.Stampede.
func runMeasuredConn(t *testing.T, limit time.Duration, dir string, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(e2etest.Bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STAMPEDE_DEBUG=")
	var eb bytes.Buffer
	cmd.Stderr = &eb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("stampede did not end within %v\n%s", limit, eb.String())
	}
	return cmd.ProcessState.ExitCode(), eb.String()
}

// hostileConnRun runs a plan with one SignalR scenario "c" (given as its
// YAML flow mapping) against hub, checks the exit code, the memory bound
// and the connection ledger, and returns the result.
func hostileConnRun(t *testing.T, hub *hostile.Hub, scenario, duration string) *result.Result {
	t.Helper()
	target := strings.TrimSuffix(hub.URL, "/hub")
	plan := e2etest.WritePlan(t, `
target: `+target+`
scenarios:
  c: `+scenario+`
load: {stages: [{duration: `+duration+`, users: 1}]}
`, nil)
	out := filepath.Join(filepath.Dir(plan), "res.json")
	code, stderr := runMeasuredConn(t, 60*time.Second, filepath.Dir(plan), "run", plan, "-o", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, stderr)
	}
	r := e2etest.ReadResult(t, out)
	// The run's own peak (VmHWM): the child's rusage would include this
	// test process's high-water mark, inherited through vfork and exec.
	rss := r.Generator.MaxRSS
	t.Logf("peak RSS %.1f MB", float64(rss)/(1<<20))
	if rss <= 0 || rss > connMemoryBound {
		t.Errorf("peak RSS %d bytes, bound %d", rss, connMemoryBound)
	}
	checkConnLedger(t, connOf(t, r, "c"))
	return r
}

// Negotiate that never answers: each attempt ends at negotiate_timeout as
// a `timeout` failure of the negotiate step, and the slots retry; only
// attempts cut short by the run's end are `interrupted`.
func TestHostileNegotiateNeverAnswers(t *testing.T) {
	hub := hostile.SignalRHub(t, hostile.HubNegotiateHangs)
	r := hostileConnRun(t, hub, `{users: 10, signalr: {url: "`+hub.URL+`", negotiate_timeout: 300ms, reconnect: 100ms}}`, "1500ms")
	cs := connOf(t, r, "c")
	if cs.Opened != 0 || cs.ByClass["timeout"] < 10 || cs.ByClass["timeout"]+cs.ByClass["interrupted"] != cs.Failed {
		t.Errorf("connections %+v", cs)
	}
	neg := stepOf(t, r, "c", "negotiate")
	if neg.Successful != 0 || neg.ByClass["timeout"] != cs.ByClass["timeout"] {
		t.Errorf("negotiate step %+v", neg)
	}
}

// A hub that accepts the WebSocket and never answers the handshake: each
// attempt ends at handshake_timeout as a `timeout` failure.
func TestHostileHandshakeNeverAnswers(t *testing.T) {
	hub := hostile.SignalRHub(t, hostile.HubHandshakeHangs)
	r := hostileConnRun(t, hub, `{users: 10, signalr: {url: "`+hub.URL+`", handshake_timeout: 300ms, reconnect: 100ms}}`, "1500ms")
	cs := connOf(t, r, "c")
	if cs.Opened != 0 || cs.ByClass["timeout"] < 10 || cs.ByClass["timeout"]+cs.ByClass["interrupted"] != cs.Failed {
		t.Errorf("connections %+v", cs)
	}
	if hs := stepOf(t, r, "c", "handshake"); hs.Successful != 0 || hs.ByClass["timeout"] != cs.ByClass["timeout"] {
		t.Errorf("handshake step %+v", hs)
	}
}

// A hub that hangs up right after each handshake: every opened connection
// is a network_reset disconnect (or, at most one per slot, open at the
// end), and opened = open at the end + disconnects.
func TestHostileHubClosesAfterHandshake(t *testing.T) {
	hub := hostile.SignalRHub(t, hostile.HubDropAfterHandshake)
	r := hostileConnRun(t, hub, `{users: 10, signalr: {url: "`+hub.URL+`", reconnect: 100ms}}`, "1500ms")
	cs := connOf(t, r, "c")
	if cs.Opened < 10 || cs.Opened > hub.Handshakes.Load() || cs.Disconnects["network_reset"] < cs.Opened-cs.OpenAtEnd || len(cs.Disconnects) > 1 {
		t.Errorf("connections %+v (hub answered %d handshakes)", cs, hub.Handshakes.Load())
	}
	// A drop that lands while the run's end closes the connection may be
	// a disconnect whose session was already counted ok: hence at most.
	if s := stepOf(t, r, "c", "session"); s.ByClass["conn_reset"] == 0 || s.ByClass["conn_reset"] > cs.Disconnects["network_reset"] {
		t.Errorf("session step %+v, disconnects %v", s, cs.Disconnects)
	}
}

// A hub that pushes as fast as the client reads, to 10 connections: memory
// stays under the bound, every push read is counted (pushes = messages in
// less one handshake answer per connection), and no more than the hub
// sent.
func TestHostilePushFlood(t *testing.T) {
	hub := hostile.SignalRHub(t, hostile.HubPushFlood)
	r := hostileConnRun(t, hub, `{users: 10, signalr: {url: "`+hub.URL+`", listen: [Tick]}}`, "2s")
	cs := connOf(t, r, "c")
	pushes := cs.Pushes["Tick"]
	if cs.Opened != 10 || cs.OpenAtEnd != 10 || len(cs.Disconnects) != 0 || cs.Failed != 0 {
		t.Errorf("connections %+v", cs)
	}
	if pushes == 0 || pushes+cs.OtherPushes != cs.MessagesIn-cs.Opened || pushes > hub.Pushes.Load() {
		t.Errorf("pushes %d (other %d), messages in %d, opened %d, hub wrote %d", pushes, cs.OtherPushes, cs.MessagesIn, cs.Opened, hub.Pushes.Load())
	}
	t.Logf("%d pushes read in 2s", pushes)
}
