package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/session"
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
	addEngineFlag(cmd.Flags())
	outputs.add(cmd.Flags())
	return cmd
}

// loadPlan loads a plan into a valid plan (session.Load): every plan
// error is reported the same way, with its place.
func loadPlan(path string) (*plan.Plan, error) {
	return session.Load(path, withAllowedFiles(plan.LoadOptions{}))
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
	live := newLive(stderr, quiet)
	// Closed at the end of the run, or by the second Ctrl-C before its
	// partial result is written.
	closeFailures := func() {}
	// Fail before any load if the result cannot be written, and set aside
	// the open files and disk space its writes need, so a run that takes
	// every file descriptor or fills the disk still saves what it measured.
	sinks, err := outputs.sinks(stderr)
	if err != nil {
		return err
	}
	outputs.planStages(p.Load)
	s, err := session.Open(session.Options{Out: out, Need: resultNeed(p, len(run.PlanMonitors(p))+len(monitors)),
		Stderr: stderr, Note: live.note, OnQuit: func() { closeFailures() }, Sinks: sinks})
	if err != nil {
		closeSinks(sinks)
		return err
	}
	defer s.Close()

	opts := run.Options{Version: version, TLS: tlsConf, Engine: engineChoice}
	if err := dist.apply(&opts, stderr, p); err != nil {
		return err
	}
	if err := monitorOptions(&opts, stderr, p, monitors); err != nil {
		return err
	}
	if closeFailures, err = errs.apply(&opts, out, stderr); err != nil {
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
	opts.Progress = live.update

	oc := s.Run(&session.InProcess{Plan: p, Options: opts, Warn: func(msg string) { fmt.Fprintln(stderr, msg) }})
	live.done()
	closeFailures()
	if oc.Result == nil || oc.Quit {
		return oc.Err()
	}
	if err := report.Text(stdout, oc.Result); err != nil {
		return fail(exitRun, err)
	}
	if oc.SaveErr != nil {
		return oc.Err()
	}
	fmt.Fprintf(stderr, "result saved to %s\n", out)
	if err := dist.emitResult(stdout, oc.Result); err != nil {
		return fail(exitRun, err)
	}
	return oc.Err()
}

func describeDemo(o demo.Options) string {
	// Redacted: the options may hold the demo database's password.
	if s := o.Redacted(); s != "" {
		return s
	}
	return "default settings"
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
