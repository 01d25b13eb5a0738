package e2e

// Results and their files: what a run saves when the disk fills or the
// load takes every open file, what --workers passes on to its workers,
// which hand-edited result files are refused, and what the demo target
// prints (issue 12, items 2, 13, 14, 15 and 17).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// okPlan is a short closed-model plan against target.
func okPlan(t *testing.T, target string, duration string) string {
	return e2etest.WritePlan(t, fmt.Sprintf(`name: results
target: %s
scenarios:
  s:
    steps:
      - think: 20ms
      - {name: ok, get: /ok}
load:
  stages: [{duration: %s, users: 2}]
  grace: 1s
`, target, duration), nil)
}

// TestHandEditedResultsRefused: a result file whose parts no longer agree
// is refused with exit 2 by every reader (report, merge, compare), and the
// message names the field and what was expected; the file as stampede
// wrote it is read as before.
func TestHandEditedResultsRefused(t *testing.T) {
	t.Parallel()
	srv, _ := statusServer(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if o := e2etest.Stampede(t, 60*time.Second, "", "run", okPlan(t, srv.URL, "1s"), "-q", "-o", good); o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if o := e2etest.Stampede(t, 30*time.Second, "", "merge", good, good, "-o", filepath.Join(dir, "m.json")); o.Code != 0 {
		t.Fatalf("merging two untouched results: want exit 0:\n%s", o)
	}
	cases := []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"totals removed", func(d map[string]any) { delete(d, "totals") }, "totals.requests is 0, expected"},
		{"series shortened", func(d map[string]any) {
			s := d["series"].(map[string]any)
			ok := s["ok"].([]any)
			s["ok"] = ok[:len(ok)-1]
		}, "series.ok has"},
		{"interval 0", func(d map[string]any) { d["series"].(map[string]any)["interval_s"] = 0 }, "series.interval_s is 0, expected a positive"},
		{"interval negative", func(d map[string]any) { d["series"].(map[string]any)["interval_s"] = -1 }, "series.interval_s is -1, expected a positive"},
		{"negative count", func(d map[string]any) {
			st := d["steps"].([]any)[0].(map[string]any)
			st["successful"] = -1.0
			st["failed"] = st["requests"].(float64) + 1
			st["by_class"] = map[string]any{"status_5xx": st["failed"]}
		}, "successful is -1, expected 0 or more"},
		{"histogram", func(d map[string]any) {
			d["totals"].(map[string]any)["latency_ok"].(map[string]any)["hdr"] = "bm90IGEgaGlzdG9ncmFt"
		}, "totals.latency_ok: bad hdr histogram"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			c.edit(doc)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(t.TempDir(), "edited.json")
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"report", bad},
				{"merge", good, bad, "-o", filepath.Join(t.TempDir(), "m.json")},
				{"compare", good, bad},
			} {
				o := e2etest.Stampede(t, 30*time.Second, "", args...)
				if o.Code != 2 || !strings.Contains(o.Stderr, c.want) || !strings.Contains(o.Stderr, bad) {
					t.Errorf("stampede %s: want exit 2 naming %s and %q:\n%s", args[0], bad, c.want, o)
				}
			}
		})
	}
}

// TestWorkersPassMonitorFlags: --workers passes the run's flags on, so
// the merged result of --monitor host has the host's series.
func TestWorkersPassMonitorFlags(t *testing.T) {
	t.Parallel()
	srv, _ := statusServer(t)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 90*time.Second, "", "run", okPlan(t, srv.URL, "2s"), "-q", "-o", out,
		"--workers", "2", "--monitor", "host")
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	var host []string
	for k := range res.Monitors {
		if strings.HasPrefix(k, "host.") {
			host = append(host, k)
		}
	}
	if len(host) == 0 {
		keys := make([]string, 0, len(res.Monitors))
		for k := range res.Monitors {
			keys = append(keys, k)
		}
		t.Errorf("merged result has no host series; monitors %v", keys)
	}
	// A bad --monitor is one usage error before any worker starts.
	o = e2etest.Stampede(t, 30*time.Second, "", "run", okPlan(t, srv.URL, "2s"), "-q", "-o", out,
		"--workers", "2", "--monitor", "hots")
	if o.Code != 2 || !strings.Contains(o.Stderr, "did you mean host") || strings.Contains(o.Stderr, "workers start") {
		t.Errorf("want exit 2 for --monitor hots before any worker starts:\n%s", o)
	}
}

// TestDemoLineOnce: a run against the demo target says where the demo is
// once, and not at all with -q.
func TestDemoLineOnce(t *testing.T) {
	t.Parallel()
	plan := e2etest.WritePlan(t, `name: demo-line
target: demo
scenarios:
  s:
    steps:
      - think: 20ms
      - {name: health, get: /healthz}
load:
  stages: [{duration: 1s, users: 1}]
`, nil)
	for _, quiet := range []bool{false, true} {
		args := []string{"run", plan, "-o", filepath.Join(t.TempDir(), "r.json")}
		want := 1
		if quiet {
			args, want = append(args, "-q"), 0
		}
		o := e2etest.Stampede(t, 60*time.Second, "", args...)
		if o.Code != 0 {
			t.Fatalf("want exit 0:\n%s", o)
		}
		if n := strings.Count(o.Stderr, "demo target"); n != want {
			t.Errorf("quiet=%v: stderr mentions the demo target %d times, want %d:\n%s", quiet, n, want, o.Stderr)
		}
	}
}

// TestResultWrittenWithEveryFileTaken: a load that takes every open file
// the process may have (each user keeps a connection to each of eight
// servers, past an open-files limit of 320 set with prlimit) still saves
// its checkpoints and its result, because the files the writes need are
// set aside before the load starts.
func TestResultWrittenWithEveryFileTaken(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("needs prlimit (util-linux) to lower the open-files limit of the run")
	}
	const users, origins, limit = 60, 8, 320
	var steps strings.Builder
	var seen atomic.Int64
	var first string
	for i := 0; i < origins; i++ {
		srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			w.Write([]byte("ok"))
		}))
		fmt.Fprintf(&steps, "      - {name: s%d, get: %q}\n", i, srv.URL+"/ok")
		if first == "" {
			first = srv.URL
		}
	}
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: files
target: %s
scenarios:
  s:
    steps:
      - think: 20ms
%sload:
  stages: [{duration: 7s, users: %d}]
  grace: 1s
`, first, steps.String(), users), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prlimit, fmt.Sprintf("--nofile=%d:%d", limit, limit), "--",
		e2etest.Bin, "run", plan, "-q", "-o", out, "--start-grace", "1m")
	cmd.Dir = e2etest.ModRoot
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code <= 0 {
		t.Fatalf("prlimit stampede: %v\n%s", err, stderr.String())
	}
	if code != 0 || strings.Contains(stderr.String(), "could not") {
		t.Fatalf("want exit 0 and every write done; exit %d\n--- stdout ---\n%s--- stderr ---\n%s", code, stdout.String(), stderr.String())
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	if res.Run.Partial {
		t.Errorf("result partial: %s", res.Run.PartialReason)
	}
	// The load did run out of files: some connections could not be opened.
	files := false
	for _, s := range res.Samples {
		files = files || strings.Contains(s.Message, "too many open files")
	}
	if !files {
		t.Errorf("no request failed for want of open files (samples %+v): the test did not exhaust them", res.Samples)
	}
	if res.Totals.Successful == 0 || res.Totals.Successful > seen.Load() {
		t.Errorf("result has %d successful requests, the servers answered %d", res.Totals.Successful, seen.Load())
	}
	leftovers(t, filepath.Dir(out))
}

// leftovers fails the test if a run left its spare files behind.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.Contains(e.Name(), "write-check") {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
}

// smallDisk runs a shell script as root of a user and mount namespace of
// its own, with a tmpfs of size at $D: a real small file system, with no
// privileges needed on the machine. The script gets BIN, PLAN, D and T
// (tdir, outside the tmpfs, for what the test reads back).
func smallDisk(t *testing.T, tdir, size, plan, script string) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare (util-linux) to mount a small tmpfs")
	}
	if out, err := exec.Command(unshare, "-rm", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a user and mount namespace here (%v: %s); the small-disk test needs one", err, out)
	}
	d := filepath.Join(tdir, "disk")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	full := `mount -t tmpfs -o size=` + size + ` tmpfs "$D" || exit 97
` + script
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "-rm", "sh", "-c", full)
	cmd.Dir = e2etest.ModRoot
	cmd.Env = append(os.Environ(), "STAMPEDE_DEBUG=", "BIN="+e2etest.Bin, "PLAN="+plan, "D="+d, "T="+tdir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("small-disk script: %v\n%s", err, out)
	}
}

func readCode(t *testing.T, dir string) (int, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "code"))
	if err != nil {
		t.Fatalf("no exit code: %v", err)
	}
	code, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	se, _ := os.ReadFile(filepath.Join(dir, "stderr"))
	so, _ := os.ReadFile(filepath.Join(dir, "stdout"))
	return code, fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s", code, so, se)
}

// TestTooSmallDiskRefused: a file system with too little free space for
// the result is refused before any load (exit 3), with the figures.
func TestTooSmallDiskRefused(t *testing.T) {
	t.Parallel()
	srv, counts := statusServer(t)
	dir := t.TempDir()
	smallDisk(t, dir, "256k", okPlan(t, srv.URL, "2s"), `
"$BIN" run "$PLAN" -q -o "$D/r.json" > "$T/stdout" 2> "$T/stderr"
echo $? > "$T/code"
ls -A "$D" > "$T/ls"
`)
	code, o := readCode(t, dir)
	if code != 3 || !strings.Contains(o, "not enough free space for the result") || !strings.Contains(o, "MiB") {
		t.Errorf("want exit 3, not enough free space, with the figures:\n%s", o)
	}
	if n := counts.get("/ok"); n != 0 {
		t.Errorf("the server saw %d requests: the run should stop before any load", n)
	}
	if ls, _ := os.ReadFile(filepath.Join(dir, "ls")); len(strings.TrimSpace(string(ls))) != 0 {
		t.Errorf("left on the small disk: %s", ls)
	}
}

// TestDiskFullDuringRun: the disk fills up once the load is running (a
// file written until ENOSPC beside the result); checkpoints may fail, but
// the final result is written in the space set aside at the start, whole.
func TestDiskFullDuringRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var once sync.Once
	var seen atomic.Int64
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		once.Do(func() { os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) })
		w.Write([]byte("ok"))
	}))
	smallDisk(t, dir, "4m", okPlan(t, srv.URL, "7s"), `
"$BIN" run "$PLAN" -q -o "$D/r.json" > "$T/stdout" 2> "$T/stderr" &
pid=$!
while [ ! -e "$T/go" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
dd if=/dev/zero of="$D/fill" bs=16k 2> "$T/dd"
df -k "$D" > "$T/df"
wait $pid
echo $? > "$T/code"
cp "$D/r.json" "$T/r.json"
ls -A "$D" > "$T/ls"
`)
	code, o := readCode(t, dir)
	df, _ := os.ReadFile(filepath.Join(dir, "df"))
	if code != 0 {
		t.Fatalf("want exit 0: the result fits in the space set aside\n%s\ndf after the fill:\n%s", o, df)
	}
	if _, err := os.Stat(filepath.Join(dir, "go")); err != nil {
		t.Fatalf("the disk was never filled: the load did not reach the server")
	}
	res := e2etest.ReadResult(t, filepath.Join(dir, "r.json"))
	checkSums(t, res)
	if res.Run.Partial {
		t.Errorf("result partial: %s", res.Run.PartialReason)
	}
	if res.Totals.Requests != seen.Load() || res.Totals.Successful != res.Totals.Requests {
		t.Errorf("result has %d requests (%d ok), the server answered %d", res.Totals.Requests, res.Totals.Successful, seen.Load())
	}
	if ls, _ := os.ReadFile(filepath.Join(dir, "ls")); strings.Contains(string(ls), ".tmp-") {
		t.Errorf("spare files left on the disk: %s", ls)
	}
}
