package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

const k8sPlan = `name: k8s e2e
target: %s
scenarios:
  s:
    steps:
      - {name: get, get: /}
load:
  stages: [{duration: 1s, users: 1}]
`

// A segment that comes up after its start time plus grace writes its exact
// reason where the kubelet reads the termination message (the pod's
// /dev/termination-log, named by the environment), so the collector
// reports that rather than a line of the log's tail. The segment sends
// nothing: its share would be shifted.
func TestK8sSegmentWritesTerminationMessage(t *testing.T) {
	t.Parallel()
	plan, seen := k8sTarget(t)
	dir := t.TempDir()
	msgFile := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(msgFile, nil, 0o666); err != nil { // the kubelet creates it empty
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	o := e2etest.Start(t, "", []string{"STAMPEDE_TERMINATION_MESSAGE_PATH=" + msgFile},
		"run", plan, "--segment", "0/3", "--start-at", start, "--start-grace", "30s", "--emit-result", "-q",
		"-o", filepath.Join(dir, "r.json")).Wait(t, 60*time.Second)
	if o.Code != 3 {
		t.Fatalf("want exit 3:\n%s", o)
	}
	b, err := os.ReadFile(msgFile)
	if err != nil {
		t.Fatal(err)
	}
	msg := string(b)
	if !strings.HasPrefix(msg, "stampede: segment started too late") || !strings.Contains(msg, "segment 0/3") {
		t.Errorf("termination message %q, want the late-start error", msg)
	}
	// The same line is the last of stderr, which is what the kubelet's
	// fallback (the log's tail) would give.
	if !strings.Contains(o.Stderr, strings.TrimSpace(msg)) {
		t.Errorf("stderr does not carry the message:\n%s", o.Stderr)
	}
	if n := seen.Load(); n != 0 {
		t.Errorf("a late segment sent %d requests", n)
	}
}

// k8sTarget is a loopback server that counts requests, and a plan for it.
func k8sTarget(t *testing.T) (string, *atomic.Int64) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	t.Cleanup(srv.Close)
	return e2etest.WritePlan(t, fmt.Sprintf(k8sPlan, srv.URL), nil), &seen
}

// Without the variable (a run outside a pod) no file is written.
func TestK8sNoTerminationMessageOutsidePods(t *testing.T) {
	t.Parallel()
	plan, _ := k8sTarget(t)
	dir := t.TempDir()
	o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "--segment", "0/3",
		"--start-at", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "-q", "-o", filepath.Join(dir, "r.json"))
	if o.Code != 3 {
		t.Fatalf("want exit 3:\n%s", o)
	}
	if _, err := os.Stat(filepath.Join(dir, "termination-log")); err == nil {
		t.Error("a termination file appeared outside a pod")
	}
}

// Names and enums the API server would refuse are refused before anything
// is sent (no kubeconfig is needed to be refused), with exit 2 and the
// rule: the cases a real API server refused.
func TestK8sValidatesBeforeSending(t *testing.T) {
	t.Parallel()
	plan := e2etest.WritePlan(t, fmt.Sprintf(k8sPlan, "http://target.example.svc:8080"), nil)
	kubeconfig := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--name", strings.Repeat("a", 62)}, "may have at most 61"},
		{[]string{"--name", "run.v2"}, "no dots"},
		{[]string{"--image-pull-policy", "Sometimes"}, "expected one of Always, IfNotPresent, Never"},
	}
	for _, c := range cases {
		args := append([]string{"k8s", plan, "--segments", "3", "--apply", "--kubeconfig", kubeconfig}, c.args...)
		o := e2etest.Stampede(t, 60*time.Second, "", args...)
		if o.Code != 2 || !strings.Contains(o.Stderr, c.want) {
			t.Errorf("%v: want exit 2 saying %q:\n%s", c.args, c.want, o)
		}
		if strings.Contains(o.Stderr, "kubeconfig") {
			t.Errorf("%v: reached the kubeconfig before refusing:\n%s", c.args, o)
		}
	}
}

// The help says how to create the manifest: plain `kubectl apply -f` fails
// once the ConfigMap is past the last-applied annotation's 262,144 bytes.
func TestK8sHelpSaysCreate(t *testing.T) {
	t.Parallel()
	o := e2etest.Stampede(t, 60*time.Second, "", "k8s", "--help")
	for _, want := range []string{"kubectl create -f", "kubectl apply --server-side -f", "262,144", "default 30s"} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("help does not say %q:\n%s", want, o.Stdout)
		}
	}
	if strings.Contains(o.Stdout, "  kubectl apply -f") {
		t.Errorf("help still shows plain kubectl apply -f:\n%s", o.Stdout)
	}
}
