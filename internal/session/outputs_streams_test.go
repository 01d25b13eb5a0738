package session

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

func streamsTestPlan(t *testing.T) (*plan.Plan, string) {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(pf, []byte("name: k8s\ntarget: http://target.example.svc:8080\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1m, users: 3}]}\n"), 0o644)
	p, err := plan.LoadFileWith(pf, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p, pf
}

// TestK8sPodsStreamAsOneRun: the pods of `k8s PLAN --output …` each push
// their own segment (the pod's --segment labels it) under one --testid,
// made once here; before, pods could not stream at all.
func TestK8sPodsStreamAsOneRun(t *testing.T) {
	p, pf := streamsTestPlan(t)
	var stderr strings.Builder
	pr := Process{Stderr: &stderr}
	f := K8sRequest{PlanFile: pf, Segments: 3, Namespace: "load", StartGrace: time.Minute,
		PodOutputs: Outputs{Streams: []string{"prometheus-rw=http://prometheus.monitoring:9090/api/v1/write"},
			Labels: []string{"env=staging"}, Headers: []string{"X-Scope-OrgID: ${TENANT}"}}}
	m, _, err := pr.manifest(p, f, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	args := m.Job.Spec.Template.Spec.Containers[0].Args
	_, rest, _ := strings.Cut(stderr.String(), "pods stream as testid=")
	id, _, _ := strings.Cut(rest, ",")
	for _, want := range [][]string{
		{"--output", "prometheus-rw=http://prometheus.monitoring:9090/api/v1/write"},
		{"--label", "env=staging"}, {"--output-header", "X-Scope-OrgID: ${TENANT}"}, {"--testid", id},
		{"--segment", "$(JOB_COMPLETION_INDEX)/3"},
	} {
		i := slices.Index(args, want[0])
		if id == "" || i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
			t.Errorf("pod args %q: want %q (stderr %q)", args, want, stderr.String())
		}
	}
}

// TestK8sPodStreamsRefused: what a pod cannot do is a usage error before
// the manifest: a file output, a token file of this machine, a bad label.
func TestK8sPodStreamsRefused(t *testing.T) {
	p, pf := streamsTestPlan(t)
	pr := Process{Stderr: io.Discard}
	for _, o := range []Outputs{
		{Streams: []string{"csv=series.csv"}},
		{Streams: []string{"otlp=http://collector:4318"}, TokenFile: "/tmp/token"},
		{Streams: []string{"otlp=http://collector:4318"}, Labels: []string{"step=x"}},
		{Streams: []string{"prometheus-rw=not a url"}},
	} {
		_, _, err := pr.manifest(p, K8sRequest{PlanFile: pf, Segments: 2, PodOutputs: o}, time.Now().Add(time.Minute))
		if err == nil {
			t.Errorf("%+v: a manifest was made", o)
		}
	}
}

// TestStreamFlagsRefused: a bad --label or --output-header, or an empty
// token file, stops the run before any load, and a token never shows.
func TestStreamFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	pr := Process{Stderr: io.Discard, LookupEnv: func(string) (string, bool) { return "", false }}
	for _, o := range []Outputs{
		{Labels: []string{"1bad=x"}}, {Labels: []string{"testid=x"}}, {Labels: []string{"novalue"}},
		{Headers: []string{"no colon"}}, {Headers: []string{"X-Key: ${UNSET_VAR}"}}, {TokenFile: empty},
		{TokenFile: filepath.Join(dir, "missing")},
	} {
		o.Streams = []string{"prometheus-rw=http://127.0.0.1:9/api/v1/write"}
		if oo, err := o.open(pr); err == nil {
			closeSinks(oo.sinks)
			t.Errorf("%+v: opened", o)
		}
	}
}
