package dist

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	// Poll is how often the Job and its pods are checked (default 2s, one
	// second more per 100 segments up to 10s: each check lists every pod,
	// about 5 KB of JSON apiece, from the API server).
	Poll time.Duration
	// Progress hears a line now and then (nil: silent).
	Progress func(string)
	// Logs fetches a pod's log; nil reads it through Client. Tests set it,
	// because the fake clientset returns a fixed body for every log.
	Logs func(ctx context.Context, pod *corev1.Pod) (io.ReadCloser, error)
	// StartBy is the start time plus the start grace: a segment whose
	// container has not started by then refuses to run when it does, so
	// Wait stops with a MissedStartError (zero: no such check).
	StartBy time.Time
	// StartSlack is added to StartBy before Wait gives up on a segment:
	// the pods' status reaches the API server a moment after the kubelet
	// starts them, and this machine's clock may differ from the nodes'
	// (default 15s).
	StartSlack time.Duration
	// Ran, when set, remembers the pods Wait saw start, so Collect can
	// tell a segment that sent load and whose pod is gone since (evicted
	// through the API, deleted) from one that never ran.
	Ran *RanPods
}

// RanPods is the pod per completion index whose stampede container was
// seen started.
type RanPods struct {
	mu   sync.Mutex
	pods map[int]string
}

func (r *RanPods) note(pods []corev1.Pod) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range pods {
		if idx, ok := podIndex(&pods[i]); ok && started(&pods[i]) {
			if r.pods == nil {
				r.pods = map[int]string{}
			}
			r.pods[idx] = pods[i].Name
		}
	}
}

// Pod is the pod seen running for index i, if any.
func (r *RanPods) Pod(i int) (string, bool) {
	if r == nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name, ok := r.pods[i]
	return name, ok
}

func (c Cluster) say(format string, a ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, a...))
	}
}

// cleanupTimeout bounds the deletes that undo a failed apply or stop a run
// that can no longer be whole; they run even when the caller's context has
// ended (Ctrl-C, a deadline), since leaving the objects is the worse end.
const cleanupTimeout = 30 * time.Second

// Apply creates the Job and then the ConfigMap, owned by the Job. All or
// nothing: when the ConfigMap cannot be created the Job is deleted again.
//
// Why this order: an owner reference needs the owner's uid, which only the
// API server assigns. Created with the reference, the ConfigMap is never
// without an owner, so deleting the Job — by hand, by its
// ttlSecondsAfterFinished, or by the cleanup here — removes both, and a
// stampede killed between the two requests leaves one Job, which the usual
// delete removes. The other order (ConfigMap, Job, then a patch adding the
// reference) leaves an orphaned ConfigMap in that window and needs a third
// request that can fail on its own. The Job's pods mount the ConfigMap:
// until it exists the kubelet keeps them in ContainerCreating and retries
// the mount, so no segment starts without its plan, and no pod of a Job
// deleted here has run.
func (c Cluster) Apply(ctx context.Context, m *Manifest) error {
	ns := c.Namespace
	job, err := c.Client.BatchV1().Jobs(ns).Create(ctx, m.Job, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("job %s/%s already exists (an earlier run?); nothing was created: delete it with 'kubectl delete job,configmap -l %s=%s -n %s', or pick another --name",
				ns, m.Job.Name, LabelRun, m.Job.Name, ns)
		}
		return fmt.Errorf("create job %s/%s: %w; nothing was created", ns, m.Job.Name, err)
	}
	undo := func(cause error) error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := c.Delete(dctx, m.Job.Name); derr != nil {
			return fmt.Errorf("%w; and the job just created could not be deleted (%v): delete it with 'kubectl delete job %s -n %s'",
				cause, derr, m.Job.Name, ns)
		}
		return fmt.Errorf("%w; the job just created was deleted again (its pods had no plan, so none ran)", cause)
	}
	if job.UID == "" {
		return undo(fmt.Errorf("the API server returned job %s/%s without a uid, so the configmap cannot name it as owner", ns, m.Job.Name))
	}
	cm := m.ConfigMap.DeepCopy()
	cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{
		APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
		// blockOwnerDeletion would need update rights on jobs/finalizers,
		// which a user who may create Jobs often lacks; the garbage
		// collector removes the ConfigMap after the Job either way.
	})
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return undo(fmt.Errorf("configmap %s/%s already exists (left by an earlier run?): delete it with 'kubectl delete configmap %s -n %s', or pick another --name",
				ns, cm.Name, cm.Name, ns))
		}
		return undo(fmt.Errorf("create configmap %s/%s: %w", ns, cm.Name, err))
	}
	// The manifest now describes what exists: callers may print it.
	m.ConfigMap.OwnerReferences = cm.OwnerReferences
	return nil
}

// Delete deletes the Job; the garbage collector then deletes its pods and
// the ConfigMap it owns. A Job already gone is not an error.
func (c Cluster) Delete(ctx context.Context, name string) error {
	err := c.Client.BatchV1().Jobs(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr(metav1.DeletePropagationBackground),
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
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

// failing is the Job's FailureTarget condition: the controller has decided
// the Job fails (DeadlineExceeded, FailedIndexes, …) and is stopping its
// pods; Failed follows once they are gone.
func failing(j *batchv1.Job) string {
	for _, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobFailureTarget && cond.Status == corev1.ConditionTrue {
			return cond.Reason + ": " + cond.Message
		}
	}
	return ""
}

// MissedStartError means segments had not started when the start time plus
// the grace had passed: each refuses to run when it does start, so the run
// can no longer give a whole result.
type MissedStartError struct {
	Job      string
	Segments int
	StartBy  time.Time
	Missing  []IndexState
}

// IndexState is why one index's segment is not running.
type IndexState struct {
	Index int
	Why   string
}

func (e *MissedStartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d segments of job %s had not started by %s (the start time plus --start-grace): they cannot run any more, so the run cannot be whole",
		len(e.Missing), e.Segments, e.Job, e.StartBy.UTC().Format(time.RFC3339))
	for k, m := range e.Missing {
		if k == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Missing)-k)
			break
		}
		fmt.Fprintf(&b, "\n  index %d: %s", m.Index, m.Why)
	}
	return b.String()
}

// Wait polls the Job until it completes or fails, ctx ends, or (StartBy
// set) segments missed their start. While it waits it reports the pods per
// phase and why pending ones wait, as the scheduler and kubelet say, and
// the Job's FailureTarget condition as soon as it appears.
func (c Cluster) Wait(ctx context.Context, name string) (*batchv1.Job, error) {
	slack := c.StartSlack
	if slack <= 0 {
		slack = 15 * time.Second
	}
	last, lastFailing := "", ""
	for {
		j, err := c.Client.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", name, err)
		}
		if done, _, _ := JobDone(j); done {
			return j, nil
		}
		f := failing(j)
		if f != "" && f != lastFailing {
			c.say("job %s is failing: %s (its pods are being stopped)", name, f)
			lastFailing = f
		}
		pods, err := c.pods(ctx, name)
		if err != nil {
			return j, err
		}
		c.Ran.note(pods)
		n := 0
		if j.Spec.Completions != nil {
			n = int(*j.Spec.Completions)
		}
		poll := c.Poll
		if poll <= 0 {
			poll = min(2*time.Second+time.Duration(n/100)*time.Second, 10*time.Second)
		}
		cs := census(pods, n)
		if line := cs.line(j); line != last {
			c.say("%s", line)
			last = line
		}
		// A failing Job is left to fail: what its finished segments left is
		// then collected.
		if f == "" && !c.StartBy.IsZero() && len(cs.notStarted) > 0 && time.Now().After(c.StartBy.Add(slack)) {
			return j, &MissedStartError{Job: name, Segments: n, StartBy: c.StartBy, Missing: cs.notStarted}
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

func (c Cluster) pods(ctx context.Context, job string) ([]corev1.Pod, error) {
	pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: batchv1.JobNameLabel + "=" + job,
	})
	if err != nil {
		return nil, fmt.Errorf("list pods of job %s: %w", job, err)
	}
	return pods.Items, nil
}

// podCensus is what Wait reports of the pods.
type podCensus struct {
	pods    int
	phases  map[corev1.PodPhase]int
	pending map[string]int // "Reason: message" of pending pods
	// notStarted are the indexes none of whose pods has started its
	// container.
	notStarted []IndexState
}

func census(pods []corev1.Pod, completions int) podCensus {
	cs := podCensus{pods: len(pods), phases: map[corev1.PodPhase]int{}, pending: map[string]int{}}
	byIndex := map[int][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		cs.phases[p.Status.Phase]++
		if p.Status.Phase == corev1.PodPending {
			cs.pending[pendingWhy(p)]++
		}
		if idx, ok := podIndex(p); ok {
			byIndex[idx] = append(byIndex[idx], p)
		}
	}
	for i := 0; i < completions; i++ {
		ps := byIndex[i]
		if slices.ContainsFunc(ps, started) {
			continue
		}
		why := "no pod yet (the Job controller has not created one)"
		if len(ps) > 0 {
			newest := slices.MaxFunc(ps, func(a, b *corev1.Pod) int {
				return a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time)
			})
			why = "pod " + newest.Name + " " + pendingWhy(newest)
			if newest.Status.Phase != corev1.PodPending {
				why = "pod " + newest.Name + " is " + string(newest.Status.Phase) + " and never ran: " + pendingWhy(newest)
			}
		}
		cs.notStarted = append(cs.notStarted, IndexState{Index: i, Why: why})
	}
	return cs
}

func (cs podCensus) line(j *batchv1.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: %d pods", j.Name, cs.pods)
	sep := ": "
	for _, ph := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		if n := cs.phases[ph]; n > 0 {
			fmt.Fprintf(&b, "%s%d %s", sep, n, ph)
			sep = ", "
		}
	}
	fmt.Fprintf(&b, "; indexes %d succeeded, %d failed", j.Status.Succeeded, j.Status.Failed)
	whys := slices.Sorted(maps.Keys(cs.pending))
	for k, why := range whys {
		if k == 5 {
			fmt.Fprintf(&b, "\n  … %d more reasons", len(whys)-k)
			break
		}
		fmt.Fprintf(&b, "\n  %d pending: %s", cs.pending[why], why)
	}
	return b.String()
}

// started reports whether the pod's stampede container has started (it
// may have finished since): from then on the segment is the Job's to fail
// or complete, not a missed start.
func started(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == ContainerName && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// pendingWhy says why a pod is not running, in the words of the scheduler
// (PodScheduled False: Unschedulable and its message) or the kubelet (a
// waiting container: ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError for a missing Secret, ContainerCreating).
func pendingWhy(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return reasonText(w.Reason, w.Message)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return reasonText(cmp.Or(cond.Reason, "NotScheduled"), cond.Message)
		}
	}
	if p.Status.Reason != "" {
		// Evicted, preempted: the pod failed before it ran.
		return reasonText(p.Status.Reason, p.Status.Message)
	}
	if p.Spec.NodeName == "" {
		return "not scheduled yet"
	}
	return "on " + p.Spec.NodeName + ", not started yet"
}

func reasonText(reason, msg string) string {
	if msg = strings.TrimSpace(msg); msg != "" {
		return reason + ": " + msg
	}
	return reason
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
			o.Err = fmt.Errorf("no pod ran (none was created, or the Job controller deleted it when the Job failed)")
			if name, ok := c.Ran.Pod(i); ok {
				o.Err = fmt.Errorf("pod %s ran and is gone (evicted or deleted) with its log: the load it sent reached the target but is not in the merge, so the merged counts are short of the target's", name)
			}
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
				o.Err = fmt.Errorf("pod %s exited with %d (%s)", pod.Name, t.ExitCode, FailureReason(t.Message))
			}
		} else if pod.Status.Phase != corev1.PodSucceeded {
			o.Err = fmt.Errorf("pod %s is %s and never ran stampede (%s)", pod.Name, pod.Status.Phase, pendingWhy(pod))
			if started(pod) {
				o.Err = fmt.Errorf("pod %s was still %s when the results were collected: its segment had not finished, and what it sent so far is not in the merge", pod.Name, pod.Status.Phase)
			}
		}
		res, err := c.readResult(ctx, pod)
		if err != nil {
			if o.Err == nil {
				o.Err = fmt.Errorf("pod %s: %w", pod.Name, err)
			}
			continue
		}
		if seg := segmentOf(res); seg.Index != i || seg.Count != segments {
			o.Err = fmt.Errorf("pod %s of index %d holds the result of segment %d/%d", pod.Name, i, seg.Index, seg.Count)
			continue
		}
		o.Result = res
	}
	return outs, nil
}

// Finished collects the segments that finished before the Job is deleted
// (a missed start): they sent their share, and deleting the Job deletes
// their logs. It is nil when none left a result to merge.
func (c Cluster) Finished(ctx context.Context, job *batchv1.Job, segments int) []Outcome {
	if job == nil {
		return nil
	}
	outs, err := c.Collect(ctx, job, segments)
	if err != nil || !slices.ContainsFunc(outs, func(o Outcome) bool { return o.Result != nil }) {
		return nil
	}
	return outs
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

// FailureReason picks the reason out of a container's termination
// message. Written by the segment (TerminationEnv), the message is its
// exact error. Otherwise, with FallbackToLogsOnError, it is the log's tail
// — the segment's summary, perhaps a result, and stampede's error last —
// so the last line stampede printed as an error wins, else the last line
// that is not part of a result (a base64 line or a marker).
func FailureReason(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "stampede:") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || isBase64(l) || strings.Contains(l, BeginMarker) || strings.Contains(l, EndMarker) {
			continue
		}
		return l
	}
	return "no message"
}
