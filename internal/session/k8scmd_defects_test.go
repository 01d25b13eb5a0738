package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/result"
)

// These run against client-go's fake clientset, a mock: it stores objects
// and runs no Job controller or kubelet; the pods' states are set by hand
// as those would set them. The defects were found against a real
// kube-apiserver and Job controller (issue 25).

// finishedPod is a pod whose stampede container exited 0.
func finishedPod(job string, index int) *corev1.Pod {
	return indexPod(job, index, corev1.PodStatus{Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{{Name: dist.ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}})
}

// A missed start deleted the Job, and with it the logs of segments that
// had already finished: their load was sent and their results lost (a
// plan shorter than the start grace plus 15s always hit this). What
// finished is now read first and saved, merged, as a partial result.
func TestK8sMissedStartKeepsFinishedSegments(t *testing.T) {
	m := k8sTestManifest(t, 2, time.Now().Add(-time.Minute))
	cs := k8sFakeClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dist.Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, StartBy: time.Now().Add(-30 * time.Second),
		StartSlack: time.Millisecond, Ran: &dist.RanPods{}}
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	cs.CoreV1().Pods("load").Create(ctx, finishedPod(job, 0), metav1.CreateOptions{})
	cs.CoreV1().Pods("load").Create(ctx, indexPod(job, 1, corev1.PodStatus{Phase: corev1.PodPending}), metav1.CreateOptions{})
	var log bytes.Buffer
	if err := dist.Emit(&log, k8sSegResult(0, 2, 42)); err != nil {
		t.Fatal(err)
	}
	c.Logs = func(_ context.Context, p *corev1.Pod) (io.ReadCloser, error) {
		if strings.HasSuffix(p.Name, "-0-x") {
			return io.NopCloser(bytes.NewReader(log.Bytes())), nil
		}
		return nil, errors.New("no log: the container never started")
	}
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	s := k8sSession(t, out, &stderr)
	deadline, _ := ctx.Deadline()
	err := Process{Stdout: &stdout, Stderr: &stderr}.collectK8s(s, c, m, 2, nil, deadline)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitRun || !strings.Contains(err.Error(), "1 of 2 segments") {
		t.Fatalf("err = %v, want exit 3 for the missed start", err)
	}
	if _, gerr := cs.BatchV1().Jobs("load").Get(ctx, job, metav1.GetOptions{}); !apierrors.IsNotFound(gerr) {
		t.Errorf("job still there: %v", gerr)
	}
	res, rerr := result.Read(out)
	if rerr != nil {
		t.Fatalf("no result saved: %v\n%s", rerr, stderr.String())
	}
	if res.Totals.Requests != 42 || !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "index 1") {
		t.Errorf("saved %d requests, partial %v %q; want segment 0's 42, partial naming index 1", res.Totals.Requests, res.Run.Partial, res.Run.PartialReason)
	}
}

// On the wait's deadline a pod still running had started stampede: it is
// not "never ran stampede", and what it sent is said to be missing.
func TestK8sRunningPodIsNotNeverRan(t *testing.T) {
	m := k8sTestManifest(t, 2, time.Now())
	cs := k8sFakeClient()
	c := dist.Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, Ran: &dist.RanPods{}}
	if err := c.Apply(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	cs.CoreV1().Pods("load").Create(context.Background(), finishedPod(job, 0), metav1.CreateOptions{})
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
	Process{Stdout: &stdout, Stderr: &stderr}.collectK8s(s, c, m, 2, nil, time.Now().Add(50*time.Millisecond))
	res, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if why := res.Run.PartialReason; strings.Contains(why, "never ran stampede") || !strings.Contains(why, "still Running") {
		t.Errorf("partial reason %q: want the running pod said to be still running, not never ran", why)
	}
}

// --start-grace 0 or negative was 30s in the manifest and as given in the
// wait: it is refused before anything is made.
func TestK8sStartGraceAboveZero(t *testing.T) {
	pf := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(pf, []byte("name: k8s\ntarget: http://target.example.svc:8080\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1m, users: 3}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, g := range []time.Duration{0, -5 * time.Second} {
		var stdout, stderr bytes.Buffer
		err := Process{Stdout: &stdout, Stderr: &stderr}.K8s(K8sRequest{PlanFile: pf, Segments: 2, StartGrace: g, StartIn: time.Minute})
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "--start-grace") {
			t.Errorf("--start-grace %v: err %v, want exit 2 naming the flag", g, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("--start-grace %v: a manifest was written:\n%s", g, stdout.String())
		}
	}
}
