package main

import (
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newURLCmd) }

// newURLCmd is the one-line load test, in the spirit of wrk and hey: one
// URL, N connections, a duration, optionally a total rate. It builds a plan
// in memory so the measurement rules are exactly those of `run`.
func newURLCmd(pr session.Process) *cobra.Command {
	var r session.URLRequest
	var redirects int
	cmd := &cobra.Command{
		Use:   "url URL",
		Short: "Load one URL: -c connections for -d, at full speed or at -r iterations/s",
		Long: `Load one URL without writing a plan.

Without -r each of the -c users sends its next request as soon as the last
one is answered (closed model, full speed). With -r the -c users are paced
so that together they start -r iterations/s (one request each, plus one
per redirect followed), holding -c connections, and latency counts from
each request's scheduled time (no coordinated omission). With --open the rate is an open-model arrival rate and -c bounds
requests in flight; without -c the bound is the arrivals of one second at
that rate (an answer may take a second before arrivals are dropped), at
least 64 and at most 10,000 (lowered to fit the open-files limit).

Redirects are followed (--redirects, 10 by default; 0 measures the 3xx
itself): each hop is a request of its own, counted in the run's totals
under the "↪ redirect" row, while the URL's row holds the final answers.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.URL, r.Engine = args[0], engineChoice
			if cmd.Flags().Changed("redirects") {
				r.Redirects = &redirects
			}
			r.OpenBound = openBound(cmd.Flags().Changed("connections"), r.Open, r.Rate)
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).URL(r)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&r.Conns, "connections", "c", 50, "users (connections); with --open, the bound on requests in flight (default: the rate's arrivals in 1 s, 64 to 10,000)")
	f.DurationVarP(&r.Duration, "duration", "d", 10*time.Second, "how long to send")
	f.Float64VarP(&r.Rate, "rate", "r", 0, "iterations/s of all users together, each one request plus its redirects' hops; with --open, arrivals/s (0: as fast as answers come)")
	f.IntVar(&redirects, "redirects", plan.DefaultRedirects, "redirects followed per request, each hop a request of its own (0: the 3xx is the answer)")
	f.BoolVar(&r.Open, "open", false, "treat -r as an open-model arrival rate (-c bounds requests in flight)")
	f.StringVarP(&r.Method, "method", "m", "GET", "HTTP method")
	f.StringArrayVarP(&r.Headers, "header", "H", nil, `request header "Name: value" (repeatable)`)
	f.StringVar(&r.Body, "body", "", "request body")
	f.DurationVar(&r.Timeout, "timeout", 30*time.Second, "per-request timeout")
	f.StringVarP(&r.Out, "out", "o", "", "also save the result JSON here")
	f.StringVar(&r.Format, "format", "text", "summary format: text, or json (a one-line brief for scripts)")
	f.StringVar(&r.CAFile, "ca-file", "", "trust the CA certificates in this PEM file instead of the system roots (a plan's tls.ca_file)")
	f.BoolVar(&r.Insecure, "insecure", false, "do not check the server's certificate at all, for a test server only (a plan's tls.insecure)")
	addEngineFlag(f)
	return cmd
}

// openBound is url's --open bound on requests in flight where -c was not
// given (openInFlight), or 0: -c as given, or not the open model.
func openBound(given, open bool, rate float64) int {
	if open && !given {
		return openInFlight(rate)
	}
	return 0
}

// openInFlight is url --open's bound on requests in flight when -c is not
// given: the arrivals of openAllowance at the rate, so a server that
// stalls that long drops no arrival (a fixed bound of 256 dropped them
// whenever the server stalled longer than 256 ÷ rate), at least
// openInFlightMin and at most openInFlightMax. A second is also the
// lateness past which the open model drops an arrival it could not start
// (run's maxCatchUp): an answer may take as long as a start may be late.
// Slots open as arrivals need them, so a bound never reached costs
// nothing.
func openInFlight(rate float64) int {
	n := math.Ceil(rate * openAllowance.Seconds())
	return int(min(max(n, openInFlightMin), openInFlightMax))
}

const (
	openAllowance = time.Second
	// openInFlightMin keeps a low rate from a bound that one slow answer
	// fills.
	openInFlightMin = 64
	// openInFlightMax is a plan's own default max_in_flight: the
	// connections one process holds beside its open-files limit.
	openInFlightMax = 10000
)
