package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newURLCmd) }

// newURLCmd is the one-line load test, in the spirit of wrk and hey: one
// URL, N connections, a duration, optionally a total rate. It builds a plan
// in memory so the measurement rules are exactly those of `run`.
func newURLCmd(pr session.Process) *cobra.Command {
	var r session.URLRequest
	cmd := &cobra.Command{
		Use:   "url URL",
		Short: "Load one URL: -c connections for -d, at full speed or at -r requests/s",
		Long: `Load one URL without writing a plan.

Without -r each of the -c users sends its next request as soon as the last
one is answered (closed model, full speed). With -r the -c users are paced
so that together they send -r requests/s, holding -c connections, and
latency counts from each request's scheduled time (no coordinated
omission). With --open the rate is an open-model arrival rate and -c bounds
requests in flight.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.URL, r.Engine = args[0], engineChoice
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).URL(r)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&r.Conns, "connections", "c", 50, "users (connections)")
	f.DurationVarP(&r.Duration, "duration", "d", 10*time.Second, "how long to send")
	f.Float64VarP(&r.Rate, "rate", "r", 0, "total requests/s (0: as fast as answers come)")
	f.BoolVar(&r.Open, "open", false, "treat -r as an open-model arrival rate (-c bounds requests in flight)")
	f.StringVarP(&r.Method, "method", "m", "GET", "HTTP method")
	f.StringArrayVarP(&r.Headers, "header", "H", nil, `request header "Name: value" (repeatable)`)
	f.StringVar(&r.Body, "body", "", "request body")
	f.DurationVar(&r.Timeout, "timeout", 30*time.Second, "per-request timeout")
	f.StringVarP(&r.Out, "out", "o", "", "also save the result JSON here")
	f.StringVar(&r.Format, "format", "text", "summary format: text, or json (a one-line brief for scripts)")
	addEngineFlag(f)
	return cmd
}
