package dist

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A segment whose pod ran and was then evicted through the API (the pod
// object deleted, its log with it) sent load that the merge cannot hold:
// it was reported as "no pod ran", and its requests vanished from the
// merge without a word. Against client-go's fake clientset (a mock: no
// Job controller or kubelet runs; the pods' states are set by hand).
func TestCollectNamesAGoneSegmentThatRan(t *testing.T) {
	_, m := testManifest(t, 2)
	cs := fakeClient()
	c := Cluster{Client: cs, Namespace: "load", Poll: time.Millisecond, Ran: &RanPods{}}
	ctx := context.Background()
	if err := c.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	job := m.Job.Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-1-a", Namespace: "load",
			Labels:      map[string]string{"batch.kubernetes.io/job-name": job},
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "1"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if _, err := cs.CoreV1().Pods("load").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The wait sees the pod running before it gives up (its first poll
	// lists the pods before it checks the deadline).
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(wctx, job); err == nil {
		t.Fatal("the wait ended without its deadline")
	}
	if err := cs.CoreV1().Pods("load").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	outs, err := c.Collect(ctx, m.Job, 2)
	if err != nil {
		t.Fatal(err)
	}
	if why := outs[1].Err; why == nil || strings.Contains(why.Error(), "no pod ran") || !strings.Contains(why.Error(), job+"-1-a ran and is gone") {
		t.Errorf("index 1: %v; want the pod that ran named, its load said to be missing", why)
	}
	if why := outs[0].Err; why == nil || !strings.Contains(why.Error(), "no pod ran") {
		t.Errorf("index 0, which never had a pod: %v", why)
	}
}
