package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// Defaults of `stampede k8s`'s flags.
const (
	DefaultImage         = dist.DefaultImage
	DefaultK8sStartIn    = dist.DefaultK8sStartIn
	DefaultK8sStartGrace = dist.DefaultK8sStartGrace
)

// K8sRequest is `stampede k8s`: a manifest of N segments, and with Apply
// the Job run, waited for, collected, merged and judged.
type K8sRequest struct {
	PlanFile   string
	AllowFiles []string
	Segments   int
	Image      string
	Namespace  string
	Name       string
	StartAt    string
	StartIn    time.Duration
	StartGrace time.Duration
	Out        string // the manifest; empty: stdout (none with Apply)
	Apply      bool
	Kubeconfig string
	Result     string // with Apply: the merged result file
	CPU, Mem   string
	Secret     string
	Pull       string
	DataPVC    string
	// PodOutputs are the network outputs each pod streams its segment to
	// (k8s PLAN: its --output, --testid, --label, --output-header).
	PodOutputs Outputs
}

// K8s writes the manifest, or applies it and collects the merged result.
func (pr Process) K8s(f K8sRequest) error {
	if f.Segments < 1 {
		return Fail(ExitUsage, errors.New("--segments N is required (N ≥ 1): the number of pods"))
	}
	if f.StartGrace <= 0 {
		// The manifest and the wait must use one grace: zero or less
		// would be the default in one and as given in the other.
		return Fail(ExitUsage, fmt.Errorf("--start-grace %v: expected a duration above zero, such as 30s (how late after the start time a pod may still run)", f.StartGrace))
	}
	p, err := pr.Load(f.PlanFile, plan.LoadOptions{AllowFiles: f.AllowFiles})
	if err != nil {
		return err
	}
	start := time.Now().Add(f.StartIn)
	if f.StartAt != "" {
		if start, err = parseStartAt(f.StartAt); err != nil {
			return err
		}
	}
	m, y, err := pr.manifest(p, f, start)
	if err != nil {
		return err
	}
	switch {
	case f.Out != "":
		if err := os.WriteFile(f.Out, y, 0o644); err != nil {
			return Fail(ExitUsage, err)
		}
		fmt.Fprintf(pr.Stderr, "manifest written to %s\n", f.Out)
	case !f.Apply:
		if _, err := pr.Stdout.Write(y); err != nil {
			return Fail(ExitRun, fmt.Errorf("the manifest could not be written: %v", err))
		}
	}
	if !f.Apply {
		fmt.Fprintf(pr.Stderr, "segments start at %s: create it before then with 'kubectl create -f' or 'kubectl apply --server-side -f' (pods that come up more than %v later do not run; make a new manifest for a later start)\n",
			start.UTC().Format(time.RFC3339), f.StartGrace)
		return nil
	}
	return pr.applyK8s(m, f, p, start)
}

// manifest builds the Job and says what each segment runs.
func (pr Process) manifest(p *plan.Plan, f K8sRequest, start time.Time) (*dist.Manifest, []byte, error) {
	claim, subPath, _ := strings.Cut(f.DataPVC, ":")
	if f.DataPVC != "" && claim == "" {
		return nil, nil, Fail(ExitUsage, fmt.Errorf("--data-pvc %q: expected CLAIM or CLAIM:SUBPATH", f.DataPVC))
	}
	streams, err := f.PodOutputs.podArgs(pr.Stderr, time.Now())
	if err != nil {
		return nil, nil, Fail(ExitUsage, err)
	}
	m, err := dist.BuildManifest(p, dist.K8s{Name: f.Name, Namespace: f.Namespace, Image: f.Image,
		Segments: f.Segments, StartAt: start, StartGrace: f.StartGrace, PlanFile: f.PlanFile,
		CPU: f.CPU, Memory: f.Mem, EnvFromSecret: f.Secret, PullPolicy: f.Pull,
		DataPVC: claim, DataSubPath: subPath, StreamArgs: streams})
	if err != nil {
		return nil, nil, Fail(ExitUsage, err)
	}
	warnKeyInConfigMap(pr.Stderr, p, m)
	y, err := m.YAML()
	if err != nil {
		return nil, nil, Fail(ExitRun, err)
	}
	for i := 0; i < f.Segments && i < 8; i++ {
		fmt.Fprintln(pr.Stderr, segment.Of(p, segment.Segment{Index: i, Count: f.Segments}))
	}
	if f.Segments > 8 {
		fmt.Fprintf(pr.Stderr, "… and %d more segments\n", f.Segments-8)
	}
	return m, y, nil
}

// k8sClient is the client of the kubeconfig's current context.
func k8sClient(kubeconfig string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, Fail(ExitUsage, fmt.Errorf("kubeconfig: %v", err))
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, Fail(ExitUsage, fmt.Errorf("kubernetes client: %v", err))
	}
	return cs, nil
}

func (pr Process) applyK8s(m *dist.Manifest, f K8sRequest, p *plan.Plan, start time.Time) error {
	cs, err := k8sClient(f.Kubeconfig)
	if err != nil {
		return err
	}
	out := f.Result
	if out == "" {
		out = defaultOut(p, time.Now())
	}
	// Ctrl-C stops waiting; the Job keeps running: delete it to stop the
	// load.
	s, err := Open(pr.options(Options{Out: out, Need: resultNeed(p, len(run.PlanMonitors(p))),
		StopNote: fmt.Sprintf("stopped waiting; the job keeps running — stop it with: kubectl delete job %s -n %s", m.Job.Name, f.Namespace)}))
	if err != nil {
		return err
	}
	defer s.Close()
	stderr := pr.Stderr
	c := dist.Cluster{Client: cs, Namespace: f.Namespace, Progress: func(s string) { fmt.Fprintln(stderr, s) },
		StartBy: start.Add(f.StartGrace), Ran: &dist.RanPods{}}
	deadline := k8sWaitDeadline(time.Now(), m)
	// Ctrl-C while the objects are created stops creating them (Apply
	// deletes what it made); from then on the session hears it.
	ctx, stop := pr.SignalContext(context.Background())
	err = c.Apply(ctx, m)
	stop()
	if err != nil {
		return Fail(ExitRun, err)
	}
	fmt.Fprintf(stderr, "created job and configmap %s/%s; segments start at %s\n", f.Namespace, m.Job.Name, start.Format(time.RFC3339))
	// The wait outlasts the Job's own deadline, so the Job's
	// DeadlineExceeded (with the controller's message) is what ends a
	// stuck run, not this wait.
	return pr.collectK8s(s, c, m, f.Segments, p, deadline)
}

// waitMargin is how long the wait outlasts the Job's activeDeadlineSeconds:
// the controller counts that from the Job's start (a moment after it is
// created) and then stops the pods before it sets Failed.
const waitMargin = 2 * time.Minute

// k8sWaitDeadline is when --apply stops waiting for a Job created at
// created.
func k8sWaitDeadline(created time.Time, m *dist.Manifest) time.Time {
	return created.Add(m.ActiveDeadline() + waitMargin)
}

// collectK8s waits for the Job until deadline, merges the segments'
// results and judges the whole in session s; split from applyK8s so it
// runs against a fake clientset.
func (pr Process) collectK8s(s *Session, c dist.Cluster, m *dist.Manifest, segments int, p *plan.Plan, deadline time.Time) error {
	oc := s.Run(&Cluster{Plan: p, Cluster: c, Manifest: m, Segments: segments, Deadline: deadline, Stderr: pr.Stderr})
	return pr.printMerged(oc, segments, s.Path())
}

// WriteTerminationMessage writes why the process exits non-zero to the
// file $STAMPEDE_TERMINATION_MESSAGE_PATH names — a pod's
// /dev/termination-log, which the kubelet reports as the container's
// termination message — so the collector names a failed segment by its
// exact error, not by whatever the log's tail holds. Best effort: without
// the file the kubelet falls back to the log's tail
// (FallbackToLogsOnError).
func (pr Process) WriteTerminationMessage(code int, err error) {
	path := pr.getenv(dist.TerminationEnv)
	if path == "" || code == ExitOK {
		return
	}
	msg := fmt.Sprintf("stampede: exited with %d; the result and the log say why", code)
	if err != nil && err.Error() != "" {
		msg = "stampede: " + err.Error()
	}
	// The kubelet keeps at most 4096 bytes of a termination message.
	if len(msg) > 4096 {
		msg = strings.ToValidUTF8(msg[:4096], "")
	}
	_ = os.WriteFile(path, []byte(msg), 0o644)
}

// CoordinatorEnv marks a --workers worker, whose stdin ends when its
// coordinator is gone (dist.CoordinatorEnv).
const CoordinatorEnv = dist.CoordinatorEnv

// warnKeyInConfigMap says that a plan's client key (tls.key_file) goes
// into the ConfigMap with its other files. Not refused: a key made for
// the test may well be the namespace's to read; but not left unsaid.
func warnKeyInConfigMap(w io.Writer, p *plan.Plan, m *dist.Manifest) {
	if p.TLS.KeyFile == "" {
		return
	}
	ns := m.ConfigMap.Namespace
	if ns == "" {
		ns = "the current one"
	}
	fmt.Fprintf(w, "stampede: warning: the client key %s goes into the ConfigMap %s, readable by whoever may read its namespace (%s): use a key made for the test\n",
		p.TLS.KeyFile, m.ConfigMap.Name, ns)
}
