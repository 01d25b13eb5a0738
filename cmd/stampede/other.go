package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/session"
)

func newValidateCmd(pr session.Process) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "validate PLAN",
		Short: "Check a plan without sending traffic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).Validate(args[0], dataDir, allowFiles)
			if err != nil {
				return err
			}
			steps := 0
			for _, s := range p.Scenarios {
				for _, st := range s.Steps {
					if st.Kind == plan.StepRequest {
						steps++
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok — %d scenario(s), %d request step(s), %s model, %v in %d stage(s), %d threshold(s)\n",
				args[0], len(p.Scenarios), steps, p.Load.Model, p.Load.Duration(), len(p.Load.Stages), len(p.Thresholds))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "read the plan's data files (relative paths) from this directory instead of the plan's, as run --data-dir does")
	return cmd
}

func newReportCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "report RESULT",
		Short: "Render a result file (every figure is recomputed from its histograms)",
		Long: `Render a result file as the terminal summary (text), Markdown in the
layout of a load-test write-up (md), a self-contained HTML page with
interactive charts that opens offline (html), the JSON document (json), or
JUnit XML for CI test reports (junit).`,
		Example: `  stampede report run.json
  stampede report run.json --format html -o report.html
  stampede report run.json --format md >> RESULTS.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			render, err := report.Renderer(format)
			if err != nil {
				return fail(exitUsage, err)
			}
			rs, err := report.ReadAll(args)
			if err != nil {
				return fail(exitUsage, err)
			}
			res := rs[0]
			return session.WriteRendered(session.Process{Stdout: cmd.OutOrStdout()}, out, func(w io.Writer) error { return render(w, res) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, md, html, json or junit")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	return cmd
}

func newDemoCmd(pr session.Process) *cobra.Command {
	var addr, opts string
	var printURL bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Serve the built-in demo target (an election API and a restaurant kitchen SignalR hub, with a small simulated database pool)",
		Long: `Serve the built-in demo target: GET /elections/{id}/parties, POST /votes
(headers voter-id and election-district-id, JSON {"partyId":"p1"}),
GET /votes/{district}/count, GET /healthz, GET /__stats.

The restaurant side (a restaurant-ordering system in miniature,
examples/restaurants.yaml): an ASP.NET Core-style SignalR hub at /hubs/kitchen (JSON protocol over
WebSockets; invoke JoinRestaurant("ID") to join that restaurant's group),
and POST /restaurants/{id}/orders, which pushes OrderPlaced
{orderId, restaurantId, sentAt} to the restaurant's joined connections.
/__stats counts the hub's connections, orders and pushes.

--options makes it misbehave like real systems, e.g.
  pool=4,service=20ms,jitter=5ms,wait=500ms   a small database pool that saturates and times out (503)
  rate_limit=100                               429 above 100 requests/s
  error_rate=0.01                              every 100th request answers 500

With a real PostgreSQL database instead of the simulated pool (the seeds'
database bottlenecks, visible in a postgres monitor):
  db=postgres://user:pass@127.0.0.1:5432/db     keep parties and votes in PostgreSQL
                                               (a URL or key=value DSN without commas;
                                               the password is never printed)
  db_pool=4                                    size of the demo's connection pool (default 8):
                                               small pools run out first
  missing_index=true                           leave out the composite index, so the
                                               duplicate-vote check scans the table
  db_seed=200000                               filler votes the table starts with
                                               (default 200000), so a scan costs what it would`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts == "" {
				opts, _ = pr.LookupEnv(session.DemoOptionsEnv)
			}
			o, err := demo.ParseOptions(opts)
			if err != nil {
				return fail(exitUsage, fmt.Errorf("--options: %v", err))
			}
			ctx, stopSig := pr.SignalContext(context.Background())
			defer stopSig()
			url, stop, err := demo.Start(ctx, addr, o)
			if err != nil {
				return fail(exitRun, err)
			}
			// With --print-url the URL is for a program (run's demo
			// child, which says where the demo is itself), not a person.
			if printURL {
				fmt.Fprintln(cmd.OutOrStdout(), url)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "demo target listening on %s (%s); Ctrl-C to stop\n", url, session.DescribeDemo(o))
			}
			<-ctx.Done()
			done := make(chan error, 1)
			go func() { done <- stop() }()
			select {
			case err := <-done:
				return err
			case <-time.After(6 * time.Second):
				return nil
			}
		},
	}
	cmd.Flags().BoolVar(&printURL, "print-url", false, "print the base URL on stdout once listening, instead of the line on stderr")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	cmd.Flags().StringVar(&opts, "options", "", "behaviour, e.g. "+strings.TrimSpace(`"pool=4,service=20ms"`))
	return cmd
}
