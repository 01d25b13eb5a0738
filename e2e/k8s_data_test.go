package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

const shareDataPlan = `name: share
target: %s
data:
  voters: {file: voters.csv, pick: unique}
scenarios:
  s:
    steps:
      - {name: vote, get: "/ok?voter={{ data.voters.id }}", expect: {status: 200}}
      - think: 20ms
load:
  stages: [{duration: 3s, users: 3}]
`

// voterServer records the voter of every request.
func voterServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var voters []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		voters = append(voters, r.URL.Query().Get("voter"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(voters)
	}
}

func votersCSV(n int) string {
	var b strings.Builder
	b.WriteString("id,district\n")
	for i := range n {
		fmt.Fprintf(&b, "v%d,d%d\n", i, i%3)
	}
	return b.String()
}

// Each of 3 segments, run through the binary as a pod runs it, loads only
// its share of a unique source (its exhaustion names the share: 3 or 4 of
// the file's 10 rows) and sends exactly those rows; together they send a
// one-process run's rows, each once.
func TestSegmentLoadsItsShareOfUniqueData(t *testing.T) {
	t.Parallel()
	srv, voters := voterServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(shareDataPlan, srv.URL), map[string]string{"voters.csv": votersCSV(10)})
	dir := t.TempDir()
	var all []string
	for i := range 3 {
		before := len(voters())
		out := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "--segment", fmt.Sprintf("%d/3", i), "-q", "-o", out)
		if o.Code != 0 {
			t.Fatalf("segment %d/3: want exit 0:\n%s", i, o)
		}
		got := voters()[before:]
		slices.Sort(got)
		var want []string
		for k := i; k < 10; k += 3 {
			want = append(want, fmt.Sprintf("v%d", k))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("segment %d/3 sent voters %v, want %v", i, got, want)
		}
		res := e2etest.ReadResult(t, out)
		share := fmt.Sprintf("segment %d/3's share: %d of the file's 10 rows", i, len(want))
		if !strings.Contains(res.Run.StopReason, share) {
			t.Errorf("segment %d/3: stop reason %q, want it to say %q", i, res.Run.StopReason, share)
		}
		all = append(all, got...)
	}
	slices.Sort(all)
	if len(all) != 10 || len(slices.Compact(all)) != 10 {
		t.Errorf("3 segments sent %d voters, want the 10 once each", len(all))
	}
}

// A segment without a row of its share refuses at start (exit 2) and sends
// nothing; so does one whose --data-dir lacks the file. Both are the checks
// a local run makes.
func TestSegmentDataChecksAtStart(t *testing.T) {
	t.Parallel()
	srv, voters := voterServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(shareDataPlan, srv.URL), map[string]string{"voters.csv": votersCSV(2)})
	dir := t.TempDir()
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "--segment", "2/3", "-q", "-o", filepath.Join(dir, "r.json"))
	if o.Code != 2 || !strings.Contains(o.Stderr, "has 2 data rows, and segment 2/3 takes rows 2, 5") {
		t.Errorf("want exit 2 naming the empty share:\n%s", o)
	}
	data := t.TempDir()
	o = e2etest.Stampede(t, 60*time.Second, "", "run", plan, "--segment", "0/3", "--data-dir", data, "-q", "-o", filepath.Join(dir, "r.json"))
	if o.Code != 2 || !strings.Contains(o.Stderr, filepath.Join(data, "voters.csv")+" not found") {
		t.Errorf("want exit 2 naming the file in --data-dir:\n%s", o)
	}
	// With the file there (other rows than beside the plan), the segment
	// sends that file's share.
	os.WriteFile(filepath.Join(data, "voters.csv"), []byte("id,district\nw0,a\nw1,a\nw2,a\nw3,a\n"), 0o644)
	o = e2etest.Stampede(t, 60*time.Second, "", "run", plan, "--segment", "1/3", "--data-dir", data, "-q", "-o", filepath.Join(dir, "r.json"))
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	if got := voters(); !slices.Equal(got, []string{"w1"}) {
		t.Errorf("voters sent %v, want [w1]", got)
	}
}

// stampede k8s --data-pvc: the manifest mounts the claim read-only at
// /data, the pods read the data from there, and the ConfigMap carries the
// plan only; a bad claim is refused before anything is written.
func TestK8sDataPVC(t *testing.T) {
	t.Parallel()
	plan := e2etest.WritePlan(t, fmt.Sprintf(shareDataPlan, "http://127.0.0.1:1"), map[string]string{"voters.csv": votersCSV(10)})
	o := e2etest.Stampede(t, 60*time.Second, "", "k8s", plan, "--segments", "3", "--data-pvc", "election-data:2026")
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	for _, want := range []string{"claimName: election-data", "subPath: \"2026\"", "- --data-dir\n        - /data", "mountPath: /data"} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("manifest lacks %q:\n%s", want, o.Stdout)
		}
	}
	if strings.Contains(o.Stdout, "v9,d0") {
		t.Error("the data file travels in the ConfigMap too")
	}
	for _, bad := range []string{"Election_Data", ":2026", "data:/abs"} {
		o := e2etest.Stampede(t, 60*time.Second, "", "k8s", plan, "--segments", "3", "--data-pvc", bad)
		if o.Code != 2 || !strings.Contains(o.Stderr, "--data-pvc") || o.Stdout != "" {
			t.Errorf("--data-pvc %s: want exit 2 naming the flag, nothing written:\n%s", bad, o)
		}
	}
}
