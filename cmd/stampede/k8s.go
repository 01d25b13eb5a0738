package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/session"
)

func init() {
	extraCommands = append(extraCommands, newK8sCmd)
}

func newK8sCmd(pr session.Process) *cobra.Command {
	var f session.K8sRequest
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
			f.PlanFile, f.AllowFiles = args[0], allowFiles
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).K8s(f)
		},
	}
	fl := cmd.Flags()
	addK8sClusterFlags(fl, &f)
	fl.StringVar(&f.StartAt, "start-at", "", "RFC 3339 instant all segments start at (default now + --start-in)")
	fl.StringVarP(&f.Out, "out", "o", "", "write the manifest here (default stdout; with --apply, not written unless given); create it with kubectl create -f or kubectl apply --server-side -f")
	fl.BoolVar(&f.Apply, "apply", false, "create the objects, wait for the Job, collect and merge the results")
	fl.StringVar(&f.Result, "result", "", "with --apply: merged result file (default stampede-<name>-<time>.json)")
	addPodOutputFlags(fl, &f.PodOutputs)
	cmd.AddCommand(newK8sLevelsCmd(pr, gatesCmd), newK8sLevelsCmd(pr, sweepCmd))
	return cmd
}

// addK8sClusterFlags are the flags of where and how the pods run, alike
// for a plan (k8s) and for levels (k8s gates, k8s sweep).
func addK8sClusterFlags(fl *pflag.FlagSet, f *session.K8sRequest) {
	fl.IntVar(&f.Segments, "segments", 0, "number of segments (pods); required")
	fl.StringVar(&f.Image, "image", session.DefaultImage, "stampede image the pods run (build it with the Dockerfile in the repository)")
	fl.StringVarP(&f.Namespace, "namespace", "n", "default", "namespace of the ConfigMap and the Job")
	fl.StringVar(&f.Name, "name", "", "name of the ConfigMap and the Job (default stampede-<plan name>)")
	fl.DurationVar(&f.StartIn, "start-in", session.DefaultK8sStartIn, "start this long after the manifest is made: time for the pods to be scheduled and pull the image")
	fl.DurationVar(&f.StartGrace, "start-grace", session.DefaultK8sStartGrace, "how late after the start time a pod may still run (a disrupted pod's replacement comes about 10s later)")
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.CPU, "cpu", "", `CPU request and limit of each pod, e.g. "2"`)
	fl.StringVar(&f.Mem, "memory", "", `memory request and limit of each pod, e.g. "1Gi"`)
	fl.StringVar(&f.Secret, "env-from-secret", "", "Secret whose keys become environment variables (the plan's ${ENV} references)")
	fl.StringVar(&f.Pull, "image-pull-policy", "", "Always, IfNotPresent or Never (default: the cluster's)")
	fl.StringVar(&f.DataPVC, "data-pvc", "", "CLAIM[:SUBPATH]: read the data files from this PersistentVolumeClaim (mounted read-only at /data) instead of the ConfigMap")
}

// newK8sLevelsCmd is `k8s gates` or `k8s sweep`: the command of that name
// with its own flags (levels, -o, --format, outputs), each level run on
// Kubernetes instead of in this process or its --workers.
func newK8sLevelsCmd(pr session.Process, levelsCmd func(session.Process, *session.K8sRequest) *cobra.Command) *cobra.Command {
	f := &session.K8sRequest{}
	cmd := levelsCmd(pr, f)
	name := cmd.Name()
	cmd.Use = strings.Replace(cmd.Use, " PLAN", " PLAN --segments N", 1)
	cmd.Short = "Like '" + name + "', each level run on Kubernetes as N segments (one Indexed Job per level)"
	cmd.Long = `Run ` + name + ` with every level as N segments on Kubernetes: one Indexed Job per
level, created once the level before it was merged and judged, whose pod i
runs 'stampede sweep PLAN --VARY V --segment i/N --start-at T' (the form a
local --workers process runs) and prints its level result to its log. The
pods' results are merged exactly into the level, which is judged once here
by the gates' SLOs and the plan's thresholds; the table, the result file
and the outputs are those of '` + name + ` --workers N'.

Each level's Job is NAME-l1, NAME-l2, … (with its ConfigMap, as 'stampede
k8s PLAN --apply' creates them); its pods start --start-in after it is
created. A level whose segments missed their start, failed or were not
collected makes the result partial and no later level runs; a Job that did
not finish is deleted after what finished was read. Ctrl-C deletes the
running level's Job the same way and writes the partial result.

` + cmd.Long
	addK8sClusterFlags(cmd.Flags(), f)
	// A cluster run needs a real target (target: demo is refused).
	_ = cmd.Flags().MarkHidden("demo")
	return cmd
}
