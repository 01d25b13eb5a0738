package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/session"
)

func init() {
	extraCommands = append(extraCommands, newK8sCmd)
}

type k8sFlags struct {
	segments   int
	image      string
	namespace  string
	name       string
	startAt    string
	startIn    time.Duration
	startGrace time.Duration
	out        string
	apply      bool
	kubeconfig string
	result     string
	cpu, mem   string
	secret     string
	pull       string
	dataPVC    string
}

func newK8sCmd() *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "k8s PLAN --segments N",
		Short: "Run a plan on Kubernetes as N segments (an Indexed Job) and merge them into one result",
		Long: `Write a ready-to-apply manifest that runs PLAN as N segments: a ConfigMap
with the plan and its data files, and an Indexed Job (completionMode
Indexed, parallelism = completions = N) whose pod i runs
'stampede run PLAN --segment i/N --start-at T'. Every pod starts at the same
instant T; a pod that comes up later than --start-grace after it does not
run, and a segment that ran is never retried (podFailurePolicy), so no share
of the load is sent twice or shifted. The default grace, 30s, covers one
eviction near the start: the Job controller replaces such a pod about 10s
later.

Names and enums are checked before anything is sent (exit 2): --name is a
DNS-1123 label (lower-case letters, digits, '-', no dots) short enough that
NAME-<index> is one too (63 characters); --image-pull-policy is Always,
IfNotPresent or Never.

Data files larger than a ConfigMap holds (1 MiB with the plan): put them on
a PersistentVolumeClaim at their paths relative to the plan and pass
--data-pvc CLAIM (or CLAIM:SUBPATH for a directory in the claim). The claim
is mounted read-only at /data in every pod, the data files stay out of the
ConfigMap, and each pod runs with --data-dir /data. The claim must be
mountable by all pods at once (ReadOnlyMany or ReadWriteMany, or all pods
on one node); any other volume source may replace it in the written
manifest. A segment keeps only its share of each unique source's rows
(rows i, i+N, ...), and checks the file as a local run does before it
starts: present, a regular file, the plan's columns, at least one row of
its share. stampede k8s reads the files here too, to check the plan.

Without --apply the manifest goes to -o (default stdout); create it with
'kubectl create -f' or 'kubectl apply --server-side -f'. Plain 'kubectl
apply -f' fails once the plan's data make the ConfigMap larger than the
262,144 bytes its last-applied annotation may hold.

With --apply the Job and then the ConfigMap (owned by the Job, so deleting
the Job deletes both) are created through the API server of the current
kubeconfig context; if the second create fails the Job is deleted again.
stampede then waits for the Job, showing the pods per phase and why pending
ones wait (Unschedulable, ImagePullBackOff, ...). If segments have not
started by the start time plus --start-grace they cannot run any more:
stampede says why, deletes the Job and exits 3. Otherwise it reads each
segment's result from its pod's log, merges them exactly and judges the
plan's thresholds on the whole. A missing or failed segment (the Job's own
failure is reported too) makes the merged result partial, and the summary
names it with the segment's own error message.`,
		Example: `  stampede k8s plan.yaml --segments 4 --image registry.example.com/stampede:0.1 -o run.yaml
  kubectl create -f run.yaml        # or: kubectl apply --server-side -f run.yaml
  stampede k8s plan.yaml --segments 4 --image registry.example.com/stampede:0.1 --apply --result run.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runK8s(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.segments, "segments", 0, "number of segments (pods); required")
	fl.StringVar(&f.image, "image", dist.DefaultImage, "stampede image the pods run (build it with the Dockerfile in the repository)")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the ConfigMap and the Job")
	fl.StringVar(&f.name, "name", "", "name of the ConfigMap and the Job (default stampede-<plan name>)")
	fl.StringVar(&f.startAt, "start-at", "", "RFC 3339 instant all segments start at (default now + --start-in)")
	fl.DurationVar(&f.startIn, "start-in", dist.DefaultK8sStartIn, "start this long after the manifest is made: time for the pods to be scheduled and pull the image")
	fl.DurationVar(&f.startGrace, "start-grace", dist.DefaultK8sStartGrace, "how late after the start time a pod may still run (a disrupted pod's replacement comes about 10s later)")
	fl.StringVarP(&f.out, "out", "o", "", "write the manifest here (default stdout; with --apply, not written unless given); create it with kubectl create -f or kubectl apply --server-side -f")
	fl.BoolVar(&f.apply, "apply", false, "create the objects, wait for the Job, collect and merge the results")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.result, "result", "", "with --apply: merged result file (default stampede-<name>-<time>.json)")
	fl.StringVar(&f.cpu, "cpu", "", `CPU request and limit of each pod, e.g. "2"`)
	fl.StringVar(&f.mem, "memory", "", `memory request and limit of each pod, e.g. "1Gi"`)
	fl.StringVar(&f.secret, "env-from-secret", "", "Secret whose keys become environment variables (the plan's ${ENV} references)")
	fl.StringVar(&f.pull, "image-pull-policy", "", "Always, IfNotPresent or Never (default: the cluster's)")
	fl.StringVar(&f.dataPVC, "data-pvc", "", "CLAIM[:SUBPATH]: read the data files from this PersistentVolumeClaim (mounted read-only at /data) instead of the ConfigMap")
	return cmd
}

func runK8s(stdout, stderr io.Writer, planPath string, f k8sFlags) error {
	if f.segments < 1 {
		return fail(exitUsage, errors.New("--segments N is required (N ≥ 1): the number of pods"))
	}
	if f.startGrace <= 0 {
		// The manifest and the wait must use one grace: zero or less
		// would be the default in one and as given in the other.
		return fail(exitUsage, fmt.Errorf("--start-grace %v: expected a duration above zero, such as 30s (how late after the start time a pod may still run)", f.startGrace))
	}
	p, err := loadPlan(planPath)
	if err != nil {
		return err
	}
	start := time.Now().Add(f.startIn)
	if f.startAt != "" {
		if start, err = time.Parse(time.RFC3339Nano, f.startAt); err != nil {
			return fail(exitUsage, fmt.Errorf("--start-at %q: expected an RFC 3339 time such as 2026-05-01T12:00:00Z", f.startAt))
		}
	}
	claim, subPath, _ := strings.Cut(f.dataPVC, ":")
	if f.dataPVC != "" && claim == "" {
		return fail(exitUsage, fmt.Errorf("--data-pvc %q: expected CLAIM or CLAIM:SUBPATH", f.dataPVC))
	}
	m, err := dist.BuildManifest(p, dist.K8s{Name: f.name, Namespace: f.namespace, Image: f.image,
		Segments: f.segments, StartAt: start, StartGrace: f.startGrace, PlanFile: planPath,
		CPU: f.cpu, Memory: f.mem, EnvFromSecret: f.secret, PullPolicy: f.pull,
		DataPVC: claim, DataSubPath: subPath})
	if err != nil {
		return fail(exitUsage, err)
	}
	y, err := m.YAML()
	if err != nil {
		return fail(exitRun, err)
	}
	for i := 0; i < f.segments && i < 8; i++ {
		fmt.Fprintln(stderr, segment.Of(p, segment.Segment{Index: i, Count: f.segments}))
	}
	if f.segments > 8 {
		fmt.Fprintf(stderr, "… and %d more segments\n", f.segments-8)
	}
	switch {
	case f.out != "":
		if err := os.WriteFile(f.out, y, 0o644); err != nil {
			return fail(exitUsage, err)
		}
		fmt.Fprintf(stderr, "manifest written to %s\n", f.out)
	case !f.apply:
		stdout.Write(y)
	}
	if !f.apply {
		fmt.Fprintf(stderr, "segments start at %s: create it before then with 'kubectl create -f' or 'kubectl apply --server-side -f' (pods that come up more than %v later do not run; make a new manifest for a later start)\n",
			start.UTC().Format(time.RFC3339), f.startGrace)
		return nil
	}
	return applyK8s(stdout, stderr, m, f, p, start)
}

func applyK8s(stdout, stderr io.Writer, m *dist.Manifest, f k8sFlags, p *plan.Plan, start time.Time) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fail(exitUsage, fmt.Errorf("kubeconfig: %v", err))
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(exitUsage, fmt.Errorf("kubernetes client: %v", err))
	}
	out := f.result
	if out == "" {
		out = defaultOut(p, time.Now())
	}
	// Ctrl-C stops waiting; the Job keeps running: delete it to stop the
	// load.
	s, err := session.Open(session.Options{Out: out, Need: resultNeed(p, len(run.PlanMonitors(p))), Stderr: stderr,
		StopNote: fmt.Sprintf("stopped waiting; the job keeps running — stop it with: kubectl delete job %s -n %s", m.Job.Name, f.namespace)})
	if err != nil {
		return err
	}
	defer s.Close()
	c := dist.Cluster{Client: cs, Namespace: f.namespace, Progress: func(s string) { fmt.Fprintln(stderr, s) },
		StartBy: start.Add(f.startGrace), Ran: &dist.RanPods{}}
	deadline := k8sWaitDeadline(time.Now(), m)
	// Ctrl-C while the objects are created stops creating them (Apply
	// deletes what it made); from then on the session hears it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = c.Apply(ctx, m)
	stop()
	if err != nil {
		return fail(exitRun, err)
	}
	fmt.Fprintf(stderr, "created job and configmap %s/%s; segments start at %s\n", f.namespace, m.Job.Name, start.Format(time.RFC3339))
	// The wait outlasts the Job's own deadline, so the Job's
	// DeadlineExceeded (with the controller's message) is what ends a
	// stuck run, not this wait.
	return collectK8s(s, stdout, stderr, c, m, f.segments, p, deadline)
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
func collectK8s(s *session.Session, stdout, stderr io.Writer, c dist.Cluster, m *dist.Manifest, segments int,
	p *plan.Plan, deadline time.Time) error {
	oc := s.Run(&session.Cluster{Plan: p, Cluster: c, Manifest: m, Segments: segments, Deadline: deadline, Stderr: stderr})
	return printMerged(stdout, stderr, oc, segments, s.Path())
}

// writeTerminationMessage writes why the process exits non-zero to the file
// $STAMPEDE_TERMINATION_MESSAGE_PATH names — a pod's /dev/termination-log,
// which the kubelet reports as the container's termination message — so
// the collector names a failed segment by its exact error, not by whatever
// the log's tail holds. Best effort: without the file the kubelet falls
// back to the log's tail (FallbackToLogsOnError).
func writeTerminationMessage(code int, err error) {
	path := os.Getenv(dist.TerminationEnv)
	if path == "" || code == exitOK {
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
