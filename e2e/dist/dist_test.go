// Package dist runs the real stampede binary as a distributed run on
// this machine (--workers N: N segment processes, merged) against a real
// loopback HTTP server that counts what it receives, and checks that the
// segments add up exactly to one process's run.
package dist

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"

	"github.com/stampede-load/stampede/internal/result"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/dist")) }

// counter is the target: it counts requests and every id it was sent.
type counter struct {
	mu  sync.Mutex
	n   int
	ids map[string]int
}

func serve(t *testing.T) (*counter, string) {
	t.Helper()
	c := &counter{ids: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n++
		c.ids[r.URL.Query().Get("id")]++
		c.mu.Unlock()
		w.Write([]byte("ok"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c, "http://" + ln.Addr().String()
}

// writePlan: exactly 200 arrivals (100/s for 2 s), each taking one unique
// row of 1000. rps > 75 holds for the whole (100/s) and fails for either
// half (50/s), so it shows which one was judged.
func writePlan(t *testing.T, dir, target string) string {
	t.Helper()
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&csv, "row%d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "ids.csv"), []byte(csv.String()), 0o644)
	plan := fmt.Sprintf(`name: dist
target: %s
data:
  ids: {file: ids.csv, pick: unique}
scenarios:
  s:
    steps:
      - name: GET /
        get: "/?id={{ data.ids.id }}"
load:
  stages:
    - {duration: 2s, rate: 100/s}
  max_in_flight: 100
  grace: 5s
thresholds: ["rps > 75", "error_rate < 1%%"]
`, target)
	p := filepath.Join(dir, "plan.yaml")
	os.WriteFile(p, []byte(plan), 0o644)
	return p
}

func runBin(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	o := e2etest.Stampede(t, time.Minute, dir, args...)
	return o.Code, o.Stdout, o.Stderr
}

func TestWorkersAddUpToOneProcess(t *testing.T) {
	dir := t.TempDir()
	srv, url := serve(t)
	plan := writePlan(t, dir, url)

	code, stdout, stderr := runBin(t, dir, "run", plan, "-q", "-o", "one.json")
	if code != 0 {
		t.Fatalf("one process: exit %d\n%s\n%s", code, stdout, stderr)
	}
	one, err := result.Read(filepath.Join(dir, "one.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	oneServer := srv.n
	srv.n, srv.ids = 0, map[string]int{}
	srv.mu.Unlock()

	code, stdout, stderr = runBin(t, dir, "run", plan, "-q", "--workers", "2", "-o", "two.json")
	if code != 0 {
		t.Fatalf("--workers 2: exit %d\n%s\n%s", code, stdout, stderr)
	}
	two, err := result.Read(filepath.Join(dir, "two.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if one.Totals.Requests != 200 || oneServer != 200 {
		t.Errorf("one process: %d requests recorded, %d served; want 200", one.Totals.Requests, oneServer)
	}
	if two.Totals.Requests != 200 || two.Totals.Successful != 200 || srv.n != 200 {
		t.Errorf("--workers 2: %d requests recorded (%d ok), %d served; want 200", two.Totals.Requests, two.Totals.Successful, srv.n)
	}
	if two.Totals.Iterations != one.Totals.Iterations {
		t.Errorf("iterations: %d with workers, %d in one process", two.Totals.Iterations, one.Totals.Iterations)
	}
	// Unique rows: 200 different ids, none twice across the segments.
	if len(srv.ids) != 200 {
		t.Errorf("%d distinct ids served, want 200", len(srv.ids))
	}
	for id, n := range srv.ids {
		if n > 1 {
			t.Errorf("unique row %q was sent %d times", id, n)
		}
	}
	// Each segment did its half and the merge is whole and judged as such.
	for i := 0; i < 2; i++ {
		seg, err := result.Read(filepath.Join(dir, "two.segments", fmt.Sprintf("seg-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		if seg.Totals.Requests != 100 || seg.Run.Segment != (result.Segment{Index: i, Count: 2}) {
			t.Errorf("segment %d: %d requests, segment %+v; want 100", i, seg.Totals.Requests, seg.Run.Segment)
		}
		if len(seg.Thresholds) != 0 {
			t.Errorf("segment %d judged its own share: %+v", i, seg.Thresholds)
		}
	}
	if two.Run.Partial || two.Run.Segment.Count != 1 {
		t.Errorf("merged: partial %v (%s), segment %+v", two.Run.Partial, two.Run.PartialReason, two.Run.Segment)
	}
	if len(two.Thresholds) != 2 || !two.Thresholds[0].Pass {
		t.Errorf("rps > 75 must be judged on the whole (100/s) and pass: %+v", two.Thresholds)
	}
	if !strings.Contains(stdout, "Total Requests:     200") {
		t.Errorf("the merged summary is not printed:\n%s", stdout)
	}
}

// A start time long gone: every segment refuses to run shifted, and the
// run says so instead of reporting a short test.
func TestLateSegmentsFailLoudly(t *testing.T) {
	dir := t.TempDir()
	srv, url := serve(t)
	plan := writePlan(t, dir, url)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	code, _, stderr := runBin(t, dir, "run", plan, "-q", "--segment", "1/2", "--start-at", past, "-o", "late.json")
	if code != 3 || !strings.Contains(stderr, "segment started too late") || !strings.Contains(stderr, "did not run") {
		t.Errorf("late segment: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = runBin(t, dir, "run", plan, "-q", "--workers", "2", "--start-at", past, "-o", "w.json")
	if code != 3 || !strings.Contains(stderr, "no segment produced a result") || !strings.Contains(stderr, "segment 2 of 2 (index 1) failed") {
		t.Errorf("late workers: exit %d, stderr:\n%s", code, stderr)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.n != 0 {
		t.Errorf("late segments sent %d requests", srv.n)
	}
}
