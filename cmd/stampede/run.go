package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

func newRunCmd() *cobra.Command {
	var (
		out      string
		demoOpts string
		quiet    bool
		monitors []string
		dist     distFlags
		errs     errorFlags
	)
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
			if dist.workers > 0 {
				return runWorkers(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], out, demoOpts, quiet, dist, cmd.Flags(), monitors)
			}
			return runPlan(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], out, demoOpts, quiet, dist, monitors, errs)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "result file (default stampede-<name>-<time>.json)")
	cmd.Flags().StringVar(&demoOpts, "demo", "", `demo target settings when the plan says target: demo, e.g. "pool=4,service=20ms,wait=500ms"`)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no live progress on stderr")
	cmd.Flags().StringArrayVar(&monitors, "monitor", nil, monitorFlagHelp)
	dist.add(cmd.Flags()) // --segment, --start-at, --workers (segments.go)
	errs.add(cmd.Flags()) // --error-messages, --keep-failures (errorflags.go)
	return cmd
}

// loadPlan loads a plan (which checks thresholds too) and the parts other
// packages own (monitors), so every plan error is reported the same way,
// with its place.
func loadPlan(path string) (*plan.Plan, error) {
	return loadPlanWith(path, plan.LoadOptions{})
}

// loadPlanWith is loadPlan with the data read as o says (datadir.go).
func loadPlanWith(path string, o plan.LoadOptions) (*plan.Plan, error) {
	p, err := plan.LoadFileWith(path, o)
	if err != nil {
		var pe *plan.Error
		if errors.As(err, &pe) {
			return nil, fail(exitUsage, fmt.Errorf("invalid plan:\n%v", err))
		}
		return nil, fail(exitUsage, fmt.Errorf("cannot read plan: %v", err))
	}
	problems := run.CheckMonitors(p)
	if len(problems) > 0 {
		return nil, fail(exitUsage, fmt.Errorf("invalid plan:\n%s", strings.Join(problems, "\n")))
	}
	return p, nil
}

func thresholdExprs(p *plan.Plan) []string {
	out := make([]string, len(p.Thresholds))
	for i, t := range p.Thresholds {
		out[i] = t.Value
	}
	return out
}

func tlsConfig(p *plan.Plan) (*tls.Config, error) {
	c := &tls.Config{InsecureSkipVerify: p.TLS.Insecure, ServerName: p.TLS.ServerName}
	if p.TLS.CAFile != "" {
		pem, err := os.ReadFile(p.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_file %s: no PEM certificate found", p.TLS.CAFile)
		}
		c.RootCAs = pool
	}
	if p.TLS.CertFile != "" || p.TLS.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(p.TLS.CertFile, p.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func defaultOut(p *plan.Plan, now time.Time) string {
	name := unsafeName.ReplaceAllString(p.Name, "-")
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	return fmt.Sprintf("stampede-%s-%s.json", name, now.Format("20060102-150405"))
}

// finish adds the verdict to a result: thresholds and indicators.
func finish(res *result.Result, p *plan.Plan) {
	res.Thresholds = gate.Evaluate(res, thresholdExprs(p))
	res.Indicators = gate.Indicators(res)
}

func runPlan(stdout, stderr io.Writer, planPath, out, demoOpts string, quiet bool, dist distFlags, monitors []string, errs errorFlags) error {
	p, err := dist.loadPlan(planPath)
	if err != nil {
		return err
	}
	if err := checkFit(p, dist.processes()); err != nil {
		return err
	}
	tlsConf, err := tlsConfig(p)
	if err != nil {
		return fail(exitUsage, err)
	}
	if out == "" {
		out = defaultOut(p, time.Now())
	}
	// Fail before any load if the result cannot be written, and set aside
	// the open files and disk space its writes need, so a run that takes
	// every file descriptor or fills the disk still saves what it measured.
	if err := checkWritable(out); err != nil {
		return fail(exitUsage, err)
	}
	output, err := openOutput(out, resultNeed(p, len(run.PlanMonitors(p))+len(monitors)))
	if err != nil {
		return err
	}
	defer output.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	opts := run.Options{Version: version, TLS: tlsConf}
	if err := dist.apply(&opts, stderr, p); err != nil {
		return err
	}
	if err := monitorOptions(&opts, stderr, p, monitors); err != nil {
		return err
	}
	closeFailures, err := errs.apply(&opts, out, stderr)
	if err != nil {
		return err
	}
	if p.Target == "demo" {
		dopts, err := demo.ParseOptions(demoOpts)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("--demo: %v", err))
		}
		url, stop, err := startDemoProcess(dopts.String())
		if err != nil {
			return fail(exitRun, fmt.Errorf("start demo target: %v", err))
		}
		defer stop()
		opts.BaseURL = url
		if !quiet {
			fmt.Fprintf(stderr, "demo target at %s (%s)\n", url, describeDemo(dopts))
		}
	} else if demoOpts != "" {
		return fail(exitUsage, errors.New("--demo applies only to plans with target: demo"))
	}

	// A failed checkpoint leaves the one before it in place and does not
	// fail the run: only the final write decides whether the result was
	// saved.
	var checkpointWarn sync.Once
	output.Warn = func(msg string) { fmt.Fprintf(stderr, "\nstampede: warning: %s\n", msg) }
	opts.Checkpoint = func(res *result.Result) {
		if err := output.Checkpoint(res); err != nil {
			checkpointWarn.Do(func() {
				fmt.Fprintf(stderr, "\nstampede: warning: a checkpoint could not be written (%v); the last good one stays in place and the run goes on\n", err)
			})
		}
	}

	var snapshot func(string) *result.Result
	var snapMu sync.Mutex
	opts.Started = func(f func(string) *result.Result) {
		snapMu.Lock()
		snapshot = f
		snapMu.Unlock()
	}

	live := newLive(stderr, quiet)
	opts.Progress = live.update

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		live.note("stopping: no new work starts; requests in flight get the grace period (Ctrl-C again to quit now)")
		cancel()
		if _, ok := <-sigs; !ok {
			return
		}
		snapMu.Lock()
		f := snapshot
		snapMu.Unlock()
		if f != nil {
			res := f("interrupted twice (Ctrl-C): requests in flight were not waited for and are not counted")
			finish(res, p)
			closeFailures()
			if err := output.Final(res); err != nil {
				fmt.Fprintf(stderr, "\nstampede: %v\n", lostResult(output, err))
				output.Close()
				os.Exit(exitRun)
			}
		}
		closeFailures()
		output.Close()
		fmt.Fprintf(stderr, "\nstampede: quit at once; partial result in %s\n", out)
		os.Exit(exitRun)
	}()

	res, err := run.Run(ctx, p, opts)
	live.done()
	closeFailures()
	if err != nil {
		if errors.Is(err, run.ErrUnreachable) {
			return fail(exitRun, fmt.Errorf("%v\nNothing was sent. Is the target running, and is the address right?", err))
		}
		return fail(exitRun, err)
	}
	finish(res, p)
	dist.unjudge(res, stderr)
	werr := output.Final(res)
	if err := report.Text(stdout, res); err != nil {
		return fail(exitRun, err)
	}
	if werr != nil {
		return fail(exitRun, lostResult(output, werr))
	}
	fmt.Fprintf(stderr, "result saved to %s\n", out)
	if err := dist.emitResult(stdout, res); err != nil {
		return fail(exitRun, err)
	}
	return verdictErr(gate.Judge(gate.Outcome{Incomplete: res.Run.Partial, Thresholds: res.Thresholds}))
}

func describeDemo(o demo.Options) string {
	// Redacted: the options may hold the demo database's password.
	if s := o.Redacted(); s != "" {
		return s
	}
	return "default settings"
}

func checkWritable(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".stampede-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write the result next to %s: %v", path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// live shows progress on stderr: one rewritten line on a terminal, a plain
// line every few seconds otherwise, so piped logs stay readable.
type live struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	quiet bool
	last  time.Time
	dirty bool
}

func newLive(w io.Writer, quiet bool) *live {
	l := &live{w: w, quiet: quiet}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		l.tty = true
	}
	return l
}

func (l *live) update(p run.Progress) {
	if l.quiet {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.tty && time.Since(l.last) < 5*time.Second && p.Elapsed < p.Total {
		return
	}
	l.last = time.Now()
	load := fmt.Sprintf("%d users", p.Active)
	if p.Model == plan.Open {
		load = fmt.Sprintf("%d in flight", p.InFlight)
	}
	errPct := 0.0
	if p.Requests > 0 {
		errPct = 100 * float64(p.Failed) / float64(p.Requests)
	}
	line := fmt.Sprintf("%s / %s  %.0f req/s  p95 %s  errors %d (%.2f%%)  %s",
		fmtElapsed(p.Elapsed), fmtElapsed(p.Total), p.RPS, report.Duration(p.P95US), p.Failed, errPct, load)
	if p.Dropped > 0 {
		line += fmt.Sprintf("  dropped %d", p.Dropped)
	}
	if l.tty {
		fmt.Fprintf(l.w, "\r\x1b[K%s", line)
		l.dirty = true
	} else {
		fmt.Fprintln(l.w, line)
	}
}

func (l *live) note(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirty {
		fmt.Fprintln(l.w)
		l.dirty = false
	}
	fmt.Fprintln(l.w, msg)
}

func (l *live) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirty {
		fmt.Fprintln(l.w)
		l.dirty = false
	}
	l.quiet = true
}

func fmtElapsed(d time.Duration) string {
	return d.Truncate(time.Second).String()
}
