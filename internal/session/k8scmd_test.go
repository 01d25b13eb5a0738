package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

func k8sTestManifest(t *testing.T, segments int, start time.Time) *dist.Manifest {
	t.Helper()
	pf := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(pf, []byte("name: k8s\ntarget: http://target.example.svc:8080\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1m, users: 3}]}\n"), 0o644)
	p, err := plan.LoadFileWith(pf, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := dist.BuildManifest(p, dist.K8s{Namespace: "load", Segments: segments, StartAt: start, PlanFile: pf})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func k8sFakeClient() *k8sfake.Clientset {
	cs := k8sfake.NewSimpleClientset()
	cs.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(metav1.Object).SetUID(types.UID("job-uid"))
		return false, nil, nil
	})
	return cs
}

// k8sSession is the session collectK8s runs in, hearing no signals.
func k8sSession(t *testing.T, out string, stderr io.Writer) *Session {
	t.Helper()
	s, err := Open(Options{Out: out, Stderr: stderr, Signals: make(chan os.Signal)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func indexPod(job string, index int, status corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-x", job, index), Namespace: "load",
			Labels:      map[string]string{batchv1.JobNameLabel: job},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(index)}},
		Status: status,
	}
}

// The wait outlasts the Job's own deadline, so the Job's DeadlineExceeded
// (with the controller's reason) ends a stuck run, not a bare "context
// deadline exceeded" one second later.
func TestK8sWaitOutlastsJobDeadline(t *testing.T) {
	now := time.Now()
	m := k8sTestManifest(t, 2, now.Add(2*time.Minute))
	jobDeadline := now.Add(time.Duration(*m.Job.Spec.ActiveDeadlineSeconds) * time.Second)
	if got := k8sWaitDeadline(now, m); !got.After(jobDeadline.Add(time.Minute)) {
		t.Errorf("wait ends %v, the job's deadline is %v: the wait must end well after it", got, jobDeadline)
	}
}

// Segments that miss the start time plus grace: stampede says which and
// why, and deletes the Job so the running segments stop (exit 3).
func TestK8sMissedStartDeletesJob(t *testing.T) {
	m := k8sTestManifest(t, 2, time.Now().Add(-time.Minute))
	cs := k8sFakeClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var progress bytes.Buffer
	c := dist.Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, StartBy: time.Now().Add(-30 * time.Second),
		StartSlack: time.Millisecond, Progress: func(s string) { fmt.Fprintln(&progress, s) }}
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	cs.CoreV1().Pods("load").Create(ctx, indexPod(job, 0, corev1.PodStatus{Phase: corev1.PodRunning}), metav1.CreateOptions{})
	cs.CoreV1().Pods("load").Create(ctx, indexPod(job, 1, corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/3 nodes are available: 3 Insufficient memory."}}}), metav1.CreateOptions{})
	var stdout, stderr bytes.Buffer
	s := k8sSession(t, filepath.Join(t.TempDir(), "r.json"), &stderr)
	deadline, _ := ctx.Deadline()
	err := Process{Stdout: &stdout, Stderr: &stderr}.collectK8s(s, c, m, 2, nil, deadline)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitRun {
		t.Fatalf("err = %v, want exit 3", err)
	}
	for _, want := range []string{"1 of 2 segments", "index 1: pod " + job + "-1-x Unschedulable: 0/3 nodes are available: 3 Insufficient memory.", "deleted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, gerr := cs.BatchV1().Jobs("load").Get(ctx, job, metav1.GetOptions{}); !apierrors.IsNotFound(gerr) {
		t.Errorf("job still there: %v", gerr)
	}
}

// The wait's own deadline (the Job never finished in time): what the
// segments that finished left is still collected and merged, as a partial
// result that names the rest.
func TestK8sWaitDeadlineCollectsFinished(t *testing.T) {
	m := k8sTestManifest(t, 2, time.Now())
	cs := k8sFakeClient()
	c := dist.Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond}
	if err := c.Apply(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	cs.CoreV1().Pods("load").Create(context.Background(), indexPod(job, 0, corev1.PodStatus{Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{{Name: dist.ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}}), metav1.CreateOptions{})
	cs.CoreV1().Pods("load").Create(context.Background(), indexPod(job, 1, corev1.PodStatus{Phase: corev1.PodRunning}), metav1.CreateOptions{})
	var log bytes.Buffer
	if err := dist.Emit(&log, k8sSegResult(0, 2, 42)); err != nil {
		t.Fatal(err)
	}
	c.Logs = func(_ context.Context, p *corev1.Pod) (io.ReadCloser, error) {
		if strings.HasSuffix(p.Name, "-0-x") {
			return io.NopCloser(bytes.NewReader(log.Bytes())), nil
		}
		return io.NopCloser(strings.NewReader("running, no result yet\n")), nil
	}
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	s := k8sSession(t, out, &stderr)
	err := Process{Stdout: &stdout, Stderr: &stderr}.collectK8s(s, c, m, 2, nil, time.Now().Add(50*time.Millisecond))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitRun || !strings.Contains(err.Error(), "partial") {
		t.Fatalf("err = %v, want exit 3 for a partial result\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "collecting the segments that finished") {
		t.Errorf("stderr does not say it collects what finished:\n%s", stderr.String())
	}
	res, rerr := result.Read(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if res.Totals.Requests != 42 || !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "index 1") {
		t.Errorf("merged %d requests, partial %v %q; want segment 0's 42, partial naming index 1", res.Totals.Requests, res.Run.Partial, res.Run.PartialReason)
	}
}

func k8sSegResult(index, count int, n int64) *result.Result {
	h := result.NewHistogram()
	for i := int64(0); i < n; i++ {
		h.RecordValue(1000 + i)
	}
	lat := result.LatencyOf(h)
	return &result.Result{
		Schema: result.Schema,
		Tool:   result.Tool{Name: "stampede", Version: "test"},
		Plan:   result.PlanInfo{Name: "k8s", SHA256: "abcd", Source: "x"},
		Run: result.RunInfo{Model: "closed", LatencyFrom: "send", Segment: result.Segment{Index: index, Count: count},
			Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Ended: time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC), DurationS: 2},
		Totals: result.Totals{Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat},
		Steps: []result.Step{{Scenario: "s", Name: "GET /", Requests: n, Successful: n, ByClass: map[string]int64{},
			LatencyOK: lat, LatencyAll: lat}},
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
}
