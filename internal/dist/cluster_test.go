package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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
	cs := fakeClient()
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
	cs := fakeClient()
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
	for _, want := range []string{"segment 2 of 4 (index 1) failed", "exited with 3", "segment 3 of 4 (index 2) failed (no pod ran", "segment 4 of 4 (index 3) failed", "no result between the markers", "missing 2, 3, 4"} {
		if !strings.Contains(merged.Run.PartialReason, want) {
			t.Errorf("partial reason %q does not say %q", merged.Run.PartialReason, want)
		}
	}
}

// fakeClient is client-go's fake clientset with what the API server does
// on create and the fake does not: assign a uid.
func fakeClient() *fake.Clientset {
	cs := fake.NewSimpleClientset()
	n := 0
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			n++
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
		}
		return false, nil, nil // on to the object tracker
	})
	return cs
}

// The Job is created first and owns the ConfigMap, so deleting the Job
// (by hand, by its TTL) deletes both.
func TestApplyConfigMapOwnedByJob(t *testing.T) {
	_, m := testManifest(t, 3)
	cs := fakeClient()
	c := Cluster{Client: cs, Namespace: "load"}
	ctx := context.Background()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	job, err := cs.BatchV1().Jobs("load").Get(ctx, m.Job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("load").Get(ctx, m.ConfigMap.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := cm.OwnerReferences
	if len(refs) != 1 || refs[0].Kind != "Job" || refs[0].APIVersion != "batch/v1" || refs[0].Name != job.Name || refs[0].UID != job.UID || job.UID == "" {
		t.Errorf("configmap owners %+v, want the job %s (uid %q)", refs, job.Name, job.UID)
	}
	var order []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" {
			order = append(order, a.GetResource().Resource)
		}
	}
	if strings.Join(order, ",") != "jobs,configmaps" {
		t.Errorf("creates in order %v, want the job first (the configmap needs its uid)", order)
	}
}

// The API server refuses the Job (the text it gave for a 62-character
// name): nothing is left behind, so the next run is not blocked by an
// "already exists" ConfigMap.
func TestApplyJobRefusedLeavesNothing(t *testing.T) {
	_, m := testManifest(t, 3)
	cs := fakeClient()
	name := m.Job.Name
	cs.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "completions"), 3, "will not able to create pod with invalid DNS label: "+name+"-2")})
	})
	c := Cluster{Client: cs, Namespace: "load"}
	err := c.Apply(context.Background(), m)
	if err == nil || !strings.Contains(err.Error(), "invalid DNS label") || !strings.Contains(err.Error(), "nothing was created") {
		t.Errorf("err = %v, want the API server's reason and that nothing was created", err)
	}
	cms, _ := cs.CoreV1().ConfigMaps("load").List(context.Background(), metav1.ListOptions{})
	if len(cms.Items) != 0 {
		t.Errorf("%d configmaps left behind after the job was refused", len(cms.Items))
	}
}

// The ConfigMap is refused after the Job was created (the API server's
// text for a ConfigMap over 1 MiB, and a leftover of an earlier run): the
// Job is deleted again, with its pods (background propagation).
func TestApplyConfigMapRefusedDeletesJob(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func(name string) error
		want string
	}{
		{"too large", func(name string) error {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, field.ErrorList{
				field.TooLong(field.NewPath(""), "", 1048576)})
		}, "Too long"},
		{"left over", func(name string) error {
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, name)
		}, "already exists (left by an earlier run?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := testManifest(t, 2)
			cs := fakeClient()
			cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err(m.ConfigMap.Name)
			})
			c := Cluster{Client: cs, Namespace: "load"}
			err := c.Apply(context.Background(), m)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "deleted again") {
				t.Errorf("err = %v, want %q and that the job was deleted", err, tc.want)
			}
			if _, gerr := cs.BatchV1().Jobs("load").Get(context.Background(), m.Job.Name, metav1.GetOptions{}); !apierrors.IsNotFound(gerr) {
				t.Errorf("job still there after the configmap failed: %v", gerr)
			}
			for _, a := range cs.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == "jobs" {
					if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
						t.Errorf("job deleted with propagation %v: its pods would be orphaned", p)
					}
				}
			}
		})
	}
}

// When even the undo fails, the message says what is left and how to
// remove it.
func TestApplyUndoFailsSaysWhatIsLeft(t *testing.T) {
	_, m := testManifest(t, 2)
	cs := fakeClient()
	cs.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, m.ConfigMap.Name,
			fmt.Errorf(`User "ci" cannot create resource "configmaps" in API group "" in the namespace "load"`))
	})
	cs.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, m.Job.Name,
			fmt.Errorf(`User "ci" cannot delete resource "jobs" in API group "batch" in the namespace "load"`))
	})
	err := Cluster{Client: cs, Namespace: "load"}.Apply(context.Background(), m)
	for _, want := range []string{`cannot create resource "configmaps"`, "could not be deleted", "kubectl delete job " + m.Job.Name + " -n load"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
}

// pendingPod is a pod of the Job as the scheduler or kubelet left it.
func pendingPod(job string, index int, status corev1.PodStatus) *corev1.Pod {
	status.Phase = corev1.PodPending
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d-x", job, index), Namespace: "load",
			Labels:      map[string]string{batchv1.JobNameLabel: job},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(index)},
		},
		Status: status,
	}
}

// Pods that cannot start: the wait says how many are in each phase and
// why the pending ones wait, in the scheduler's and kubelet's words, and
// once the start time plus the grace has passed it stops with the indexes
// that missed it rather than waiting for the Job's deadline.
func TestWaitReportsPendingAndMissedStart(t *testing.T) {
	_, m := testManifest(t, 4)
	cs := fakeClient()
	var lines []string
	c := Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, Progress: func(s string) { lines = append(lines, s) },
		StartBy: time.Now().Add(-time.Minute), StartSlack: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	pods := []*corev1.Pod{
		pendingPod(job, 0, corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}}}),
		pendingPod(job, 1, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example.com/stampede:0.1"`}}}}}),
		{ObjectMeta: metav1.ObjectMeta{Name: job + "-2-x", Namespace: "load", Labels: map[string]string{batchv1.JobNameLabel: job},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "2"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}},
		// Index 3 has no pod at all.
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods("load").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Wait(ctx, job)
	var missed *MissedStartError
	if !errors.As(err, &missed) {
		t.Fatalf("err = %v, want a MissedStartError", err)
	}
	var idx []int
	for _, ms := range missed.Missing {
		idx = append(idx, ms.Index)
	}
	if !slices.Equal(idx, []int{0, 1, 3}) {
		t.Errorf("missing indexes %v, want 0 1 3 (2 is running)", idx)
	}
	msg := err.Error()
	for _, want := range []string{"3 of 4 segments", "index 0: pod " + job + "-0-x Unschedulable: 0/3 nodes are available: 3 Insufficient cpu",
		"index 1: pod " + job + "-1-x ImagePullBackOff: Back-off pulling image", "index 3: no pod yet"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	progress := strings.Join(lines, "\n")
	for _, want := range []string{"3 pods: 2 Pending, 1 Running", "1 pending: Unschedulable: 0/3 nodes", "1 pending: ImagePullBackOff"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress %q does not say %q", progress, want)
		}
	}
}

// Before the start time plus grace, pending pods are only reported; and a
// segment that ran and failed is the Job's to fail, not a missed start.
func TestWaitKeepsWaitingBeforeStartBy(t *testing.T) {
	_, m := testManifest(t, 2)
	cs := fakeClient()
	c := Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, StartBy: time.Now().Add(time.Hour)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	cs.CoreV1().Pods("load").Create(ctx, pendingPod(job, 0, corev1.PodStatus{}), metav1.CreateOptions{})
	var polls atomic.Int64
	cs.PrependReactor("get", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		polls.Add(1)
		return false, nil, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for polls.Load() < 5 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		// Segment 1 ran and failed, and the Job failed.
		runFakeJob(t, cs, "load", job, []podPlan{{index: 1, exit: 3}}, true)
	}()
	got, err := c.Wait(ctx, job)
	<-done
	if err != nil {
		t.Fatalf("err = %v, want the failed job", err)
	}
	if done, failed, why := JobDone(got); !done || !failed || !strings.Contains(why, "FailedIndexes") {
		t.Errorf("JobDone = %v %v %q", done, failed, why)
	}
}

// The Job's FailureTarget (the controller decided, e.g. DeadlineExceeded,
// and is stopping the pods) is reported as soon as it appears, and the
// Job is then left to fail — even past the start time with its segment
// never started — so what finished is collected, not deleted.
func TestWaitReportsFailureTarget(t *testing.T) {
	_, m := testManifest(t, 1)
	cs := fakeClient()
	var lines []string
	c := Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, Progress: func(s string) { lines = append(lines, s) },
		StartBy: time.Now().Add(-time.Hour), StartSlack: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	polls := 0
	cs.PrependReactor("get", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		polls++
		j := m.Job.DeepCopy()
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue,
			Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}
		if polls >= 3 {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
				Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"})
		}
		return true, j, nil
	})
	j, err := c.Wait(ctx, m.Job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, failed, why := JobDone(j); !failed || why != "DeadlineExceeded: Job was active longer than specified deadline" {
		t.Errorf("failed %v, why %q", failed, why)
	}
	if n := strings.Count(strings.Join(lines, "\n"), "is failing: DeadlineExceeded: Job was active longer than specified deadline"); n != 1 {
		t.Errorf("FailureTarget reported %d times, want once: %q", n, lines)
	}
}

// The reason of a failed segment: the segment's own message when it wrote
// the termination file; with the kubelet's fallback (the log's tail) the
// last error line stampede printed, not the first line of the tail.
func TestFailureReason(t *testing.T) {
	var emitted bytes.Buffer
	Emit(&emitted, segResult(t, 0, 3, 10, 5))
	cases := map[string]string{
		"stampede: segment started too late: segment 0/3 came up 41s after the start time": "stampede: segment started too late: segment 0/3 came up 41s after the start time",
		// The fallback tail as it was seen against a real cluster: the
		// share line first, the error last.
		"segment 0/3: users 0 → 14 → 14 (peak 14)\nwaiting 0s for the start time\nstampede: segment started too late: …\n": "stampede: segment started too late: …",
		// A partial segment: its summary and emitted result, then the exit.
		"Total Requests: 10\n" + emitted.String():                              "Total Requests: 10",
		"Total Requests: 10\n" + emitted.String() + "stampede: cannot write\n": "stampede: cannot write",
		"": "no message",
	}
	for in, want := range cases {
		if got := FailureReason(in); got != want {
			t.Errorf("FailureReason(%q) = %q, want %q", in, got, want)
		}
	}
}
