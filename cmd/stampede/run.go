package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/session"
)

const monitorFlagHelp = `server-side metrics beside the load, as KIND[=TARGET]; repeatable:
host, process=nginx, process=1234, redis=127.0.0.1:6379,
prometheus=http://127.0.0.1:9100/metrics,
'postgres=postgres://user:${PGPASSWORD}@127.0.0.1:5432/db' (single quotes
keep the password out of the shell and ps; stampede expands ${NAME}).
One of the same kind and name as a plan monitor replaces its target`

func newRunCmd(pr session.Process) *cobra.Command {
	var r session.RunRequest
	var outs outputFlags
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "Run a test plan",
		Long: `Run a test plan. Live progress goes to stderr, the summary to stdout, and
the result JSON to -o (default: stampede-<plan name>-<time>.json).

Ctrl-C stops starting new work, lets requests in flight finish (the plan's
grace period), prints the partial summary and writes a result marked
partial. A second Ctrl-C writes the partial result at once and exits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.PlanFile, r.Engine, r.AllowFiles, r.Outputs = args[0], engineChoice, allowFiles, session.Outputs(outs)
			r.WorkerArgs = workerFlags(cmd.Flags())
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).Run(r)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&r.Out, "out", "o", "", "result file (default stampede-<name>-<time>.json)")
	f.StringVar(&r.Demo, "demo", "", `demo target settings when the plan says target: demo, e.g. "pool=4,service=20ms,wait=500ms"`)
	f.BoolVarP(&r.Quiet, "quiet", "q", false, "no live progress on stderr")
	f.StringArrayVar(&r.Monitors, "monitor", nil, monitorFlagHelp)
	addSplitFlags(f, &r.Split)
	f.IntVar(&r.Failures.Top, "error-messages", session.DefaultErrorsTop, "distinct failure messages kept per step (the rest count as other messages)")
	f.IntVar(&r.Failures.Keep, "keep-failures", 0, "write up to N complete failing exchanges per step to RESULT.failures.jsonl (secrets redacted)")
	addEngineFlag(f)
	outs.add(f)
	return cmd
}

// addSplitFlags are the run flags of distributed runs: one segment of a
// test (--segment, --start-at; what a Kubernetes pod runs), or N local
// segment processes merged into one result (--workers).
func addSplitFlags(fs *pflag.FlagSet, d *session.Split) {
	fs.StringVar(&d.Segment, "segment", "", "run only segment INDEX/COUNT of the test (index from 0), e.g. 0/4; merge the segments' results with 'stampede merge'")
	fs.StringVar(&d.StartAt, "start-at", "", "start at this RFC 3339 instant (all segments of a run share it); a segment that comes up later than --start-grace after it does not run")
	fs.DurationVar(&d.StartGrace, "start-grace", session.DefaultStartGrace, "how late after --start-at a segment may still start")
	fs.IntVar(&d.Workers, "workers", 0, "run the test as N segment processes on this machine, then merge them and judge the whole (past one process's limits, such as open files)")
	fs.StringVar(&d.DataDir, "data-dir", "", "read the plan's data files (relative paths) from this directory instead of the plan's (a volume mounted in a pod)")
	fs.BoolVar(&d.Emit, "emit-result", false, "also print the result file (gzip, base64) between marker lines on stdout, for collection from pod logs")
}

// notForWorkers are the run flags --workers handles itself; every other
// flag given is passed on to each worker as it was given, so a flag added
// to 'run' later reaches the workers without a change here.
var notForWorkers = map[string]string{
	"out":         "each worker writes its segment's result in the .segments directory",
	"quiet":       "workers always run quiet; their output goes to their logs",
	"demo":        "refused with --workers",
	"segment":     "each worker gets its own",
	"start-at":    "passed as the instant every worker starts at",
	"workers":     "the workers are segments, not more workers",
	"emit-result": "refused with --workers",
	"cpuprofile":  "one profile file cannot take N processes",
	"output":      "streamed by the coordinator from the workers' merged checkpoints",
	"junit":       "written by the coordinator from the merged result",
	"dashboard":   "served by the coordinator from the workers' merged checkpoints",
}

// workerFlags is the command line given to 'run' that the workers need too
// (--monitor, --start-grace, ...), as --name=value for each value given.
func workerFlags(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) {
		if _, own := notForWorkers[f.Name]; own {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}
