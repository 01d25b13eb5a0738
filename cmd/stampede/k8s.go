package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/result"
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
of the load is sent twice or shifted.

Without --apply the manifest goes to -o (default stdout) for kubectl apply.
With --apply it is created through the API server of the current kubeconfig
context; stampede then waits for the Job, reads each segment's result from
its pod's log, merges them exactly and judges the plan's thresholds on the
whole. A missing or failed segment makes the merged result partial, and the
summary names it.`,
		Example: `  stampede k8s plan.yaml --segments 4 --image registry.example.com/stampede:0.1 -o run.yaml
  kubectl apply -f run.yaml
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
	fl.DurationVar(&f.startIn, "start-in", 2*time.Minute, "start this long after the manifest is made: time for the pods to be scheduled and pull the image")
	fl.DurationVar(&f.startGrace, "start-grace", dist.DefaultK8sStartGrace, "how late after the start time a pod may still run")
	fl.StringVarP(&f.out, "out", "o", "", "write the manifest here (default stdout; with --apply, not written unless given)")
	fl.BoolVar(&f.apply, "apply", false, "create the objects, wait for the Job, collect and merge the results")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.result, "result", "", "with --apply: merged result file (default stampede-<name>-<time>.json)")
	fl.StringVar(&f.cpu, "cpu", "", `CPU request and limit of each pod, e.g. "2"`)
	fl.StringVar(&f.mem, "memory", "", `memory request and limit of each pod, e.g. "1Gi"`)
	fl.StringVar(&f.secret, "env-from-secret", "", "Secret whose keys become environment variables (the plan's ${ENV} references)")
	fl.StringVar(&f.pull, "image-pull-policy", "", "Always, IfNotPresent or Never (default: the cluster's)")
	return cmd
}

func runK8s(stdout, stderr io.Writer, planPath string, f k8sFlags) error {
	if f.segments < 1 {
		return fail(exitUsage, errors.New("--segments N is required (N ≥ 1): the number of pods"))
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
	m, err := dist.BuildManifest(p, dist.K8s{Name: f.name, Namespace: f.namespace, Image: f.image,
		Segments: f.segments, StartAt: start, StartGrace: f.startGrace, PlanFile: planPath,
		CPU: f.cpu, Memory: f.mem, EnvFromSecret: f.secret, PullPolicy: f.pull})
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
		fmt.Fprintf(stderr, "segments start at %s: apply before then (pods that come up more than %v later do not run; make a new manifest for a later start)\n",
			start.UTC().Format(time.RFC3339), f.startGrace)
		return nil
	}
	return applyK8s(stdout, stderr, m, f, p.Load.Duration()+p.Load.Grace, start,
		func(res *result.Result) { finish(res, p) }, defaultOut(p, time.Now()))
}

func applyK8s(stdout, stderr io.Writer, m *dist.Manifest, f k8sFlags, length time.Duration,
	start time.Time, judge func(*result.Result), defOut string) error {
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
		out = defOut
	}
	if err := checkWritable(out); err != nil {
		return fail(exitUsage, err)
	}
	// The wait ends at the Job's own deadline at the latest; Ctrl-C stops
	// waiting (the Job keeps running: delete it to stop the load).
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(f.startGrace+length+10*time.Minute))
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			fmt.Fprintf(stderr, "stopped waiting; the job keeps running — stop it with: kubectl delete job %s -n %s\n", m.Job.Name, f.namespace)
			cancel()
		}
	}()
	c := dist.Cluster{Client: cs, Namespace: f.namespace, Progress: func(s string) { fmt.Fprintln(stderr, s) }}
	if err := c.Apply(ctx, m); err != nil {
		return fail(exitRun, err)
	}
	fmt.Fprintf(stderr, "created configmap and job %s/%s; segments start at %s\n", f.namespace, m.Job.Name, start.Format(time.RFC3339))
	return collectK8s(ctx, stdout, stderr, c, m, f.segments, judge, out)
}

// collectK8s waits for the Job, merges the segments' results and judges
// the whole; split from applyK8s so it runs against a fake clientset.
func collectK8s(ctx context.Context, stdout, stderr io.Writer, c dist.Cluster, m *dist.Manifest, segments int,
	judge func(*result.Result), out string) error {
	job, err := c.Wait(ctx, m.Job.Name)
	if err != nil {
		return fail(exitRun, err)
	}
	if _, failed, why := dist.JobDone(job); failed {
		fmt.Fprintf(stderr, "job %s failed: %s\n", job.Name, why)
	}
	outs, err := c.Collect(ctx, job, segments)
	if err != nil {
		return fail(exitRun, err)
	}
	return mergeAndJudge(stdout, stderr, outs, judge, out)
}
