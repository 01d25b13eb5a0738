package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// These tests run `stampede k8s sweep|gates` against client-go's fake
// clientset, a mock: it stores objects and runs no Job controller,
// scheduler or kubelet. fakeJobController below plays those parts by
// hand, at once as each Job is created (pods created, terminated and logged as they would be), so the
// tests show what the coordinator creates, collects, merges, judges and
// deletes; they cannot show real scheduling, eviction, admission or
// timing.

// podPlay is what the fake controller makes of one pod: its phase and
// exit code, and its log (a level result emitted, or nothing).
type podPlay struct {
	phase    corev1.PodPhase
	exitCode int32
	requests int64 // >0: the log holds a level result of this many requests
}

// fakeJobController completes each level's Job as play says, as the Job
// is created: for the level's value and each index, the pod it makes. A
// Job whose pods all terminated is created Complete (or Failed when one
// failed); one with a pod still pending or running stays running.
type fakeJobController struct {
	cs   *k8sfake.Clientset
	play func(value float64, index int) podPlay

	mu     sync.Mutex
	logs   map[string][]byte // pod name → log
	jobs   []*batchv1.Job    // in the order they were created
	onJobs func(n int)
}

// install makes the Job controller and the kubelet act within each
// create of a Job (a reactor, under the fake's lock: it writes the pods
// straight to the object tracker).
func (f *fakeJobController) install() {
	f.cs.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		job := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job)
		f.start(job)
		return false, nil, nil
	})
}

func (f *fakeJobController) start(job *batchv1.Job) {
	vary, value := levelOf(job)
	segments := int(*job.Spec.Completions)
	done, failed := true, false
	for i := range segments {
		pl := f.play(value, i)
		st := corev1.PodStatus{Phase: pl.phase}
		switch pl.phase {
		case corev1.PodSucceeded, corev1.PodFailed:
			st.ContainerStatuses = []corev1.ContainerStatus{{Name: dist.ContainerName, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: pl.exitCode}}}}
			failed = failed || pl.phase == corev1.PodFailed
		default:
			done = false
		}
		pod := indexPod(job.Name, i, st)
		if pl.requests > 0 {
			var log bytes.Buffer
			if err := dist.Emit(&log, levelSegResult(vary, value, i, segments, pl.requests)); err != nil {
				panic(err)
			}
			f.mu.Lock()
			f.logs[pod.Name] = log.Bytes()
			f.mu.Unlock()
		}
		if err := f.cs.Tracker().Add(pod); err != nil {
			panic(err)
		}
	}
	if done {
		cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
		if failed {
			cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "FailedIndexes", Message: "Job has failed indexes"}
		}
		job.Status.Conditions = append(job.Status.Conditions, cond)
	}
	f.mu.Lock()
	f.jobs = append(f.jobs, job.DeepCopy())
	n, on := len(f.jobs), f.onJobs
	f.mu.Unlock()
	if on != nil {
		on(n)
	}
}

func (f *fakeJobController) log(_ context.Context, p *corev1.Pod) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.logs[p.Name]; ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return nil, errors.New("no result in the log")
}

func (f *fakeJobController) created() []*batchv1.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.jobs)
}

// levelOf reads the level a Job runs from its pods' arguments.
func levelOf(job *batchv1.Job) (string, float64) {
	args := job.Spec.Template.Spec.Containers[0].Args
	v, _ := strconv.ParseFloat(args[3], 64)
	return strings.TrimPrefix(args[2], "--"), v
}

// levelSegResult is what `sweep --segment i/N` leaves for one level: the
// level's result of its share, with the whole run's figures (one level)
// around it, as levels.Combine makes them.
func levelSegResult(vary string, v float64, index, count int, n int64) *result.Result {
	lr := k8sSegResult(index, count, n)
	// How far the pod's users numbered: the next level's start after the
	// highest of any pod's.
	lr.Run.IDsReached = &result.IDsReached{VU: int64(v) * int64(index+1), Iter: 100 * int64(v)}
	top := *k8sSegResult(index, count, n)
	top.Run.Segment = result.Segment{Index: 0, Count: 1}
	top.Levels = []result.Level{{Vary: vary, Value: v, Result: lr}}
	return &top
}

const k8sLevelsPlan = "name: k8s levels\ntarget: http://target.example.svc:8080\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1m, users: 3}]}\n"

// k8sLevels runs `stampede k8s sweep PLAN --users 2,4,6 --segments 2`
// against the fake controller; notify, when set, is the session's
// signals.
// k8sLevelsRun is what k8sLevels ran and what came of it.
type k8sLevelsRun struct {
	fc             *fakeJobController
	out            string // the result file
	stdout, stderr *bytes.Buffer
	err            error
}

func k8sLevels(t *testing.T, play func(float64, int) podPlay, notify func(chan<- os.Signal) func(), onJobs func(*fakeJobController, int), split ...func(*LevelSplit)) k8sLevelsRun {
	t.Helper()
	dir := t.TempDir()
	pf := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(pf, []byte(k8sLevelsPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.LoadFileWith(pf, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := k8sFakeClient()
	fc := &fakeJobController{cs: cs, play: play, logs: map[string][]byte{}}
	if onJobs != nil {
		fc.onJobs = func(n int) { onJobs(fc, n) }
	}
	fc.install()
	out := filepath.Join(dir, "sweep.json")
	var stdout, stderr bytes.Buffer
	pr := Process{Stdout: &stdout, Stderr: &stderr, Notify: notify}
	if notify == nil {
		pr.Notify = func(chan<- os.Signal) func() { return func() {} }
	}
	ls := LevelSplit{
		K8s: &K8sRequest{Segments: 2, Namespace: "load", Image: "registry.example.com/stampede:0.1",
			StartIn: time.Millisecond, StartGrace: 30 * time.Second},
		k8sCluster: &dist.Cluster{Client: cs, Poll: time.Millisecond, Logs: fc.log},
	}
	for _, f := range split {
		f(&ls)
	}
	err = pr.Levels(LevelsRequest{Kind: "sweep", PlanFile: pf, Plan: p, Vary: plan.VaryUsers, Values: []float64{2, 4, 6},
		Hold: time.Second, Format: "text", Out: out, Quiet: true, Split: ls})
	return k8sLevelsRun{fc: fc, out: out, stdout: &stdout, stderr: &stderr, err: err}
}

// Three levels of two pods each: one Job per level, in order, each pod
// running the level's segment as a local --workers process would; each
// level's result is the exact merge of its pods' level results, judged
// once, and the table and result file are those of a local sweep.
func TestK8sLevelsMergeEachLevel(t *testing.T) {
	play := func(v float64, i int) podPlay {
		return podPlay{phase: corev1.PodSucceeded, requests: int64(10*v) + int64(i)}
	}
	r := k8sLevels(t, play, nil, nil)
	fc, out, err, stdout, stderr := r.fc, r.out, r.err, r.stdout, r.stderr
	if err != nil {
		t.Fatalf("err = %v\n%s", err, stderr)
	}
	res, rerr := result.Read(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res.Levels) != 3 || res.Run.Partial {
		t.Fatalf("%d levels, partial %v %q; want 3 whole\n%s", len(res.Levels), res.Run.Partial, res.Run.PartialReason, stderr)
	}
	for k, v := range []float64{2, 4, 6} {
		l := res.Levels[k]
		want := int64(10*v) + int64(10*v) + 1 // index 0 and index 1
		if l.Value != v || l.Result.Totals.Requests != want || l.Result.Run.Partial {
			t.Errorf("level %d: users %g, %d requests, partial %v; want users %g, %d requests merged from both pods",
				k+1, l.Value, l.Result.Totals.Requests, l.Result.Run.Partial, v, want)
		}
	}
	if want := int64(20+21) + (40 + 41) + (60 + 61); res.Totals.Requests != want {
		t.Errorf("all levels: %d requests, want %d", res.Totals.Requests, want)
	}
	if !strings.Contains(stdout.String(), "P95") {
		t.Errorf("no sweep table on stdout:\n%s", stdout)
	}
	jobs := fc.created()
	if len(jobs) != 3 {
		t.Fatalf("%d jobs created, want one per level", len(jobs))
	}
	seeds := map[string]bool{}
	for k, j := range jobs {
		seeds[checkLevelJob(t, j, k, []float64{2, 4, 6}[k], []string{"", " --ids-after 4,200", " --ids-after 8,400"}[k])] = true
	}
	if len(seeds) != 1 {
		// One seed for every level's pods (the plan gives none), as `run
		// --workers` hands its workers one.
		t.Errorf("the levels' pods were handed seeds %v, want one", seeds)
	}
}

// checkLevelJob checks level k's manifest: its name, its pods' command
// (the level's segment, as a local --workers process runs it) and the
// level it says it runs.
// It returns the seed the pods are handed.
func checkLevelJob(t *testing.T, j *batchv1.Job, k int, v float64, idsAfter string) string {
	t.Helper()
	if want := fmt.Sprintf("stampede-k8s-levels-l%d", k+1); j.Name != want {
		t.Errorf("level %d: job %s, want %s", k+1, j.Name, want)
	}
	args := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " ")
	want := fmt.Sprintf("sweep /plan/plan.yaml --users %g --ramp 0s --hold 1s%s --segment $(JOB_COMPLETION_INDEX)/2 --start-at ", v, idsAfter)
	if !strings.HasPrefix(args, want) || !strings.Contains(args, "--start-grace 30s --emit-result") {
		t.Errorf("level %d runs %q, want %q… --start-grace 30s --emit-result …", k+1, args, want)
	}
	if got := j.Annotations["stampede.io/level"]; got != fmt.Sprintf("users %g", v) {
		t.Errorf("level %d: annotation %q", k+1, got)
	}
	env := j.Spec.Template.Spec.Containers[0].Env
	seed := ""
	if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == dist.SeedEnv }); i >= 0 {
		seed = env[i].Value
	}
	if seed == "" {
		t.Errorf("level %d: no %s in the pods' environment: %v", k+1, dist.SeedEnv, env)
	}
	if *j.Spec.Completions != 2 || *j.Spec.Parallelism != 2 || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("level %d: not an Indexed Job of 2 pods at once", k+1)
	}
	return seed
}

// A level whose pod failed and left no result: the level is the merge of
// what the other pod left, marked partial with the pod's failure, and no
// later level's Job is created (exit 3).
func TestK8sLevelsFailedPodStopsTheLevels(t *testing.T) {
	play := func(v float64, i int) podPlay {
		if v == 4 && i == 1 {
			return podPlay{phase: corev1.PodFailed, exitCode: 3}
		}
		return podPlay{phase: corev1.PodSucceeded, requests: int64(10*v) + int64(i)}
	}
	r := k8sLevels(t, play, nil, nil)
	fc, out, err, stderr := r.fc, r.out, r.err, r.stderr
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitRun {
		t.Fatalf("err = %v, want exit 3\n%s", err, stderr)
	}
	res, rerr := result.Read(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res.Levels) != 2 || !res.Run.Partial {
		t.Fatalf("%d levels, partial %v; want 2 levels, partial\n%s", len(res.Levels), res.Run.Partial, stderr)
	}
	l := res.Levels[1]
	if l.Result.Totals.Requests != 40 || !l.Result.Run.Partial || !strings.Contains(l.Result.Run.PartialReason, "exited with 3") || l.Pass {
		t.Errorf("level 2: %d requests, partial %v %q, pass %v; want index 0's 40, partial naming the pod's exit, not passed",
			l.Result.Totals.Requests, l.Result.Run.Partial, l.Result.Run.PartialReason, l.Pass)
	}
	if res.Levels[0].Result.Totals.Requests != 41 || !res.Levels[0].Pass {
		t.Errorf("level 1: %d requests, pass %v; want 41, passed", res.Levels[0].Result.Totals.Requests, res.Levels[0].Pass)
	}
	if n := len(fc.created()); n != 2 {
		t.Errorf("%d jobs created, want 2: no level after the partial one", n)
	}
	if !strings.Contains(stderr.String(), "job stampede-k8s-levels-l2 failed: FailedIndexes") {
		t.Errorf("stderr does not name the Job's failure:\n%s", stderr)
	}
}

// Ctrl-C while a level's pods run: what finished is read, the running
// Job is deleted (its pods would go on sending load), and the result is
// written partial with the levels before it whole.
func TestK8sLevelsCtrlCDeletesTheJob(t *testing.T) {
	play := func(v float64, i int) podPlay {
		if v == 4 {
			if i == 0 {
				return podPlay{phase: corev1.PodSucceeded, requests: 40}
			}
			return podPlay{phase: corev1.PodRunning}
		}
		return podPlay{phase: corev1.PodSucceeded, requests: int64(10*v) + int64(i)}
	}
	sigs := make(chan chan<- os.Signal, 1)
	notify := func(c chan<- os.Signal) func() {
		sigs <- c
		return func() {}
	}
	onJobs := func(_ *fakeJobController, n int) {
		if n == 2 {
			// The second level's Job is running: Ctrl-C.
			(<-sigs) <- os.Interrupt
		}
	}
	r := k8sLevels(t, play, notify, onJobs)
	fc, out, err, stderr := r.fc, r.out, r.err, r.stderr
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitRun {
		t.Fatalf("err = %v, want exit 3\n%s", err, stderr)
	}
	if _, gerr := fc.cs.BatchV1().Jobs("load").Get(context.Background(), "stampede-k8s-levels-l2", metav1.GetOptions{}); !apierrors.IsNotFound(gerr) {
		t.Errorf("level 2's job still there after Ctrl-C: %v\n%s", gerr, stderr)
	}
	if _, gerr := fc.cs.BatchV1().Jobs("load").Get(context.Background(), "stampede-k8s-levels-l1", metav1.GetOptions{}); gerr != nil {
		t.Errorf("level 1's finished job was deleted: %v", gerr)
	}
	res, rerr := result.Read(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res.Levels) != 2 || !res.Run.Partial || res.Levels[0].Result.Totals.Requests != 41 {
		t.Fatalf("%d levels, partial %v; want level 1 whole and level 2 cut off\n%s", len(res.Levels), res.Run.Partial, stderr)
	}
	l := res.Levels[1].Result
	if l.Totals.Requests != 40 || !l.Run.Partial || !strings.Contains(l.Run.PartialReason, "still Running") {
		t.Errorf("level 2: %d requests, partial %v %q; want the finished pod's 40, partial naming the running one", l.Totals.Requests, l.Run.Partial, l.Run.PartialReason)
	}
	if n := len(fc.created()); n != 2 {
		t.Errorf("%d jobs created, want 2", n)
	}
}

// A level whose pod never started by its start time plus the grace: the
// finished pod's result is read, the Job is deleted (the level cannot be
// whole), the level is saved partial naming the missed start, and no
// later level runs.
func TestK8sLevelsMissedStartStopsTheLevels(t *testing.T) {
	play := func(v float64, i int) podPlay {
		if v == 4 && i == 1 {
			return podPlay{phase: corev1.PodPending}
		}
		return podPlay{phase: corev1.PodSucceeded, requests: int64(10*v) + int64(i)}
	}
	r := k8sLevels(t, play, nil, nil, func(l *LevelSplit) {
		l.K8s.StartGrace = time.Millisecond
		l.k8sCluster.StartSlack = time.Millisecond
	})
	var ee *ExitError
	if !errors.As(r.err, &ee) || ee.Code != ExitRun {
		t.Fatalf("err = %v, want exit 3\n%s", r.err, r.stderr)
	}
	if _, gerr := r.fc.cs.BatchV1().Jobs("load").Get(context.Background(), "stampede-k8s-levels-l2", metav1.GetOptions{}); !apierrors.IsNotFound(gerr) {
		t.Errorf("level 2's job still there after its missed start: %v", gerr)
	}
	res, rerr := result.Read(r.out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res.Levels) != 2 || !res.Run.Partial {
		t.Fatalf("%d levels, partial %v; want 2, partial\n%s", len(res.Levels), res.Run.Partial, r.stderr)
	}
	l := res.Levels[1].Result
	if l.Totals.Requests != 40 || !strings.Contains(l.Run.PartialReason, "missed its start") {
		t.Errorf("level 2: %d requests, partial %q; want the finished pod's 40, the other named as missing its start", l.Totals.Requests, l.Run.PartialReason)
	}
	if n := len(r.fc.created()); n != 2 {
		t.Errorf("%d jobs created, want 2", n)
	}
}
