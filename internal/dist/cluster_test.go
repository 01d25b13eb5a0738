package dist

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeController does what the Job controller and the kubelet would: pods
// with their completion index, container exits, and the Job's condition.
// No API server runs here; the fake clientset only stores objects.
type podPlan struct {
	index int
	exit  int32
	log   string // what the pod printed
}

func runFakeJob(t *testing.T, cs *fake.Clientset, ns, job string, pods []podPlan, failed bool) {
	t.Helper()
	ctx := context.Background()
	for k, pp := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d-%d", job, pp.index, k), Namespace: ns,
				Labels:            map[string]string{batchv1.JobNameLabel: job},
				Annotations:       map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(pp.index)},
				CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+k), 0)),
			},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
				Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: pp.exit,
					Message: "stampede: segment started too late"}}}}},
		}
		if pp.exit != 0 {
			pod.Status.Phase = corev1.PodFailed
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	if failed {
		cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "FailedIndexes", Message: "Job has failed indexes"}
	}
	j.Status.Conditions = append(j.Status.Conditions, cond)
	if _, err := cs.BatchV1().Jobs(ns).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func logsOf(pods []podPlan) func(context.Context, *corev1.Pod) (io.ReadCloser, error) {
	return func(_ context.Context, p *corev1.Pod) (io.ReadCloser, error) {
		for k, pp := range pods {
			if strings.HasSuffix(p.Name, fmt.Sprintf("-%d-%d", pp.index, k)) {
				return io.NopCloser(strings.NewReader(pp.log)), nil
			}
		}
		return nil, fmt.Errorf("no log for %s", p.Name)
	}
}

func emitted(t *testing.T, index, count int, n int64) string {
	var b bytes.Buffer
	b.WriteString("summary text\n")
	if err := Emit(&b, segResult(t, index, count, n, 100*int64(index+1))); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestApplyWaitCollectMerge(t *testing.T) {
	_, m := testManifest(t, 3)
	cs := fake.NewSimpleClientset()
	c := Cluster{Client: cs, Namespace: "load", Poll: 5 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := cs.BatchV1().Jobs("load").Get(ctx, m.Job.Name, metav1.GetOptions{})
	if err != nil || *got.Spec.Completions != 3 || *got.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("job as stored: %v %+v", err, got.Spec)
	}
	if _, err := cs.CoreV1().ConfigMaps("load").Get(ctx, m.ConfigMap.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// Applying again must not overwrite a run that may be in progress.
	if err := c.Apply(ctx, m); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second apply: %v, want already exists", err)
	}

	pods := []podPlan{
		{index: 0, log: emitted(t, 0, 3, 100)},
		// Index 1 was replaced once (an evicted pod before it ran, no log),
		// then ran: the pod that ran is the one read.
		{index: 1, exit: 0, log: "fake logs"},
		{index: 1, log: emitted(t, 1, 3, 200)},
		{index: 2, log: emitted(t, 2, 3, 300)},
	}
	pods[1].exit = 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(20 * time.Millisecond) // Wait polls a few times first
		runFakeJob(t, cs, "load", m.Job.Name, pods, false)
	}()
	job, err := c.Wait(ctx, m.Job.Name)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	c.Logs = logsOf(pods)
	outs, err := c.Collect(ctx, job, 3)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := Merge(outs)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Totals.Requests != 600 || merged.Run.Partial || merged.Run.Segment.Count != 1 {
		t.Errorf("merged %d requests, partial %v (%s), want 600 complete", merged.Totals.Requests, merged.Run.Partial, merged.Run.PartialReason)
	}
}

// A segment that exited non-zero, one with no pod, and the fake clientset's
// own fixed log body: the merge is partial and names each.
func TestCollectNamesFailedSegments(t *testing.T) {
	_, m := testManifest(t, 4)
	cs := fake.NewSimpleClientset()
	c := Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond}
	ctx := context.Background()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	pods := []podPlan{
		{index: 0, log: emitted(t, 0, 4, 100)},
		{index: 1, exit: 3, log: "stampede: segment started too late"},
		{index: 3, log: "whatever"},
	}
	runFakeJob(t, cs, "load", m.Job.Name, pods, true)
	job, err := c.Wait(ctx, m.Job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if done, failed, _ := JobDone(job); !done || !failed {
		t.Errorf("JobDone = %v %v, want a failed job", done, failed)
	}
	// Index 0 through the test's logs; index 3 through the fake clientset,
	// whose GetLogs returns "fake logs" for every pod.
	fakeLogs := c
	fakeLogs.Logs = func(ctx context.Context, p *corev1.Pod) (io.ReadCloser, error) {
		if strings.Contains(p.Name, "-0-") {
			return logsOf(pods)(ctx, p)
		}
		return cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(ctx)
	}
	outs, err := fakeLogs.Collect(ctx, job, 4)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := Merge(outs)
	if err != nil {
		t.Fatal(err)
	}
	if !merged.Run.Partial || merged.Totals.Requests != 100 {
		t.Fatalf("partial %v, %d requests; want partial with 100", merged.Run.Partial, merged.Totals.Requests)
	}
	for _, want := range []string{"segment 2 of 4 (index 1) failed", "exited with 3", "segment 3 of 4 (index 2) failed (no pod ran)", "segment 4 of 4 (index 3) failed", "no result between the markers", "missing 2, 3, 4"} {
		if !strings.Contains(merged.Run.PartialReason, want) {
			t.Errorf("partial reason %q does not say %q", merged.Run.PartialReason, want)
		}
	}
}
