package dist

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/result"
)

// Cluster applies a manifest, waits for its Job and collects the segments'
// results from the pods' logs.
type Cluster struct {
	Client    kubernetes.Interface
	Namespace string
	// Poll is how often the Job is checked (default 2s).
	Poll time.Duration
	// Progress hears a line now and then (nil: silent).
	Progress func(string)
	// Logs fetches a pod's log; nil reads it through Client. Tests set it,
	// because the fake clientset returns a fixed body for every log.
	Logs func(ctx context.Context, pod *corev1.Pod) (io.ReadCloser, error)
}

func (c Cluster) say(format string, a ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, a...))
	}
}

// Apply creates the ConfigMap and then the Job. An existing object of the
// same name is an error, never overwritten: it may be a run in progress.
func (c Cluster) Apply(ctx context.Context, m *Manifest) error {
	ns := c.Namespace
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, m.ConfigMap, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("configmap %s/%s already exists (an earlier run?): delete it with 'kubectl delete job,configmap -l %s=%s -n %s', or pick another --name",
				ns, m.ConfigMap.Name, LabelRun, m.ConfigMap.Name, ns)
		}
		return fmt.Errorf("create configmap: %w", err)
	}
	if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, m.Job, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("job %s/%s already exists: delete it with 'kubectl delete job,configmap -l %s=%s -n %s', or pick another --name",
				ns, m.Job.Name, LabelRun, m.Job.Name, ns)
		}
		return fmt.Errorf("create job: %w", err)
	}
	return nil
}

// JobDone reports whether the Job has finished, and whether it failed.
func JobDone(j *batchv1.Job) (done, failed bool, reason string) {
	for _, cond := range j.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return true, false, ""
		case batchv1.JobFailed:
			return true, true, cond.Reason + ": " + cond.Message
		}
	}
	return false, false, ""
}

// Wait polls the Job until it completes or fails (or ctx ends).
func (c Cluster) Wait(ctx context.Context, name string) (*batchv1.Job, error) {
	poll := c.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	last := ""
	for {
		j, err := c.Client.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", name, err)
		}
		if done, _, _ := JobDone(j); done {
			return j, nil
		}
		line := fmt.Sprintf("job %s: %d active, %d succeeded, %d failed", name, j.Status.Active, j.Status.Succeeded, j.Status.Failed)
		if line != last {
			c.say("%s", line)
			last = line
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return j, fmt.Errorf("waiting for job %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// podIndex is the completion index of a pod of an Indexed Job.
func podIndex(p *corev1.Pod) (int, bool) {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil
}

// Collect reads each segment's result from the log of its pod — for an
// index with several pods (a replaced one), the newest that ran. A segment
// with no pod, a failed pod or no readable result is an Outcome with Err
// set; Merge then names it.
func (c Cluster) Collect(ctx context.Context, job *batchv1.Job, segments int) ([]Outcome, error) {
	pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: batchv1.JobNameLabel + "=" + job.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("list pods of job %s: %w", job.Name, err)
	}
	byIndex := map[int][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if idx, ok := podIndex(p); ok {
			byIndex[idx] = append(byIndex[idx], p)
		}
	}
	outs := make([]Outcome, segments)
	for i := range outs {
		o := &outs[i]
		o.Segment = segment.Segment{Index: i, Count: segments}
		o.ExitCode = -1
		ps := byIndex[i]
		if len(ps) == 0 {
			o.Err = fmt.Errorf("no pod ran")
			continue
		}
		// Newest first; a pod that ran (has a terminated container) beats
		// one that never started.
		sort.SliceStable(ps, func(a, b int) bool {
			ta, tb := terminated(ps[a]) != nil, terminated(ps[b]) != nil
			if ta != tb {
				return ta
			}
			return ps[b].CreationTimestamp.Before(&ps[a].CreationTimestamp)
		})
		pod := ps[0]
		o.Log = "pod/" + pod.Name
		if t := terminated(pod); t != nil {
			o.ExitCode = int(t.ExitCode)
			if t.ExitCode != 0 {
				o.Err = fmt.Errorf("pod %s exited with %d (%s)", pod.Name, t.ExitCode, firstLine(t.Message))
			}
		} else if pod.Status.Phase != corev1.PodSucceeded {
			o.Err = fmt.Errorf("pod %s is %s and never ran stampede", pod.Name, pod.Status.Phase)
		}
		res, err := c.readResult(ctx, pod)
		if err != nil {
			if o.Err == nil {
				o.Err = fmt.Errorf("pod %s: %w", pod.Name, err)
			}
			continue
		}
		if res.Run.Segment.Index != i || res.Run.Segment.Count != segments {
			o.Err = fmt.Errorf("pod %s of index %d holds the result of segment %d/%d", pod.Name, i, res.Run.Segment.Index, res.Run.Segment.Count)
			continue
		}
		o.Result = res
	}
	return outs, nil
}

func (c Cluster) readResult(ctx context.Context, pod *corev1.Pod) (_ *result.Result, err error) {
	var rc io.ReadCloser
	if c.Logs != nil {
		rc, err = c.Logs(ctx, pod)
	} else {
		rc, err = c.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: ContainerName}).Stream(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	defer rc.Close()
	return Extract(rc)
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ContainerName && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	if s == "" {
		return "no message"
	}
	return s
}
