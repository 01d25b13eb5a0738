package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/convert"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newConvertCmd) }

func newConvertCmd(session.Process) *cobra.Command {
	var (
		out            string
		o              convert.Options
		keepStatic     bool
		keepThirdParty bool
		noCorrelate    bool
	)
	cmd := &cobra.Command{
		Use:   "convert {har FILE.har | curl 'curl ...' | jmx FILE.jmx}",
		Short: "Make a plan from a browser recording (HAR), a curl command or a JMeter test plan",
		Long:  convertLong,
		Example: `  stampede convert har checkout.har -o checkout.yaml
  stampede convert har session.har --host shop.example.com --users 20 --duration 5m
  stampede convert jmx azure-test.jmx -o azure-test.yaml
  stampede convert curl 'curl -X POST https://api.example.com/votes -H "voter-id: 7" --json "{\"partyId\":\"p1\"}"'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.KeepStatic, o.KeepThirdParty, o.NoCorrelate = keepStatic, keepThirdParty, noCorrelate
			return runConvert(cmd, args, out, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "out", "o", "", "write the plan to this file (default stdout)")
	f.StringVar(&o.Name, "name", "", "plan and scenario name (default recording)")
	f.StringVar(&o.Host, "host", "", "the application's host[:port] (default: the first non-static request's)")
	f.BoolVar(&keepStatic, "keep-static", false, "keep static assets (scripts, styles, images, fonts)")
	f.BoolVar(&keepThirdParty, "keep-third-party", false, "keep requests to other hosts than --host")
	f.BoolVar(&noCorrelate, "no-correlate", false, "send every value as recorded (no captures)")
	f.DurationVar(&o.MinThink, "min-think", 100*time.Millisecond, "recorded gaps shorter than this get no think step")
	f.IntVar(&o.Users, "users", 1, "users of the plan's load stage")
	f.DurationVar(&o.Duration, "duration", time.Minute, "duration of the plan's load stage")
	return cmd
}

// runConvert converts args[1] as args[0] (har or curl) says, checks that
// the plan loads, and writes it to out (default stdout).
func runConvert(cmd *cobra.Command, args []string, out string, o convert.Options) error {
	var (
		text []byte
		sum  convert.Summary
		err  error
	)
	switch args[0] {
	case "har":
		data, rerr := os.ReadFile(args[1])
		if rerr != nil {
			return fail(exitUsage, rerr)
		}
		o.Source = args[1]
		text, sum, err = convert.HAR(data, o)
	case "curl":
		o.AllowFiles = allowFiles
		text, sum, err = convert.Curl(args[1], o)
	case "jmx":
		return convertJMX(cmd, args[1], out, o)
	default:
		return fail(exitUsage, fmt.Errorf("convert %q: expected har, curl or jmx", args[0]))
	}
	if err != nil {
		return fail(exitUsage, err)
	}
	// A plan that does not load is the converter's bug, not the
	// user's: say so rather than write it.
	name := out
	if name == "" {
		name = "converted.yaml"
	}
	// The plan's ${ENV} references (curl's credentials) are the
	// user's to set; its files are the ones curl read here.
	anyEnv := func(string) (string, bool) { return "set-by-the-user", true }
	loadOpts := plan.LoadOptions{AllowFiles: append([]string{"."}, allowFiles...)}
	if _, perr := plan.ParseWith(name, text, anyEnv, loadOpts); perr != nil {
		return fail(exitUsage, fmt.Errorf("the converted plan does not load (please report this): %v", perr))
	}
	if out != "" && out != "-" {
		if err := os.WriteFile(out, text, 0o644); err != nil {
			return fail(exitUsage, err)
		}
	} else if _, err := cmd.OutOrStdout().Write(text); err != nil {
		return fail(exitRun, err)
	}
	summarize(cmd.ErrOrStderr(), sum, out)
	return nil
}

func summarize(w io.Writer, s convert.Summary, out string) {
	dest := "stdout"
	if out != "" && out != "-" {
		dest = out
	}
	fmt.Fprintf(w, "convert: %d of %d requests to %s written to %s", s.Kept, s.Total, s.MainHost, dest)
	var left []string
	if s.Static > 0 {
		left = append(left, fmt.Sprintf("%d static", s.Static))
	}
	if s.ThirdParty > 0 {
		left = append(left, fmt.Sprintf("%d third-party (%s)", s.ThirdParty, strings.Join(s.ThirdPartyHosts, ", ")))
	}
	if s.Other > 0 {
		left = append(left, fmt.Sprintf("%d not sendable", s.Other))
	}
	if len(left) > 0 {
		fmt.Fprintf(w, "; left out %s", strings.Join(left, ", "))
	}
	fmt.Fprintln(w)
	for _, c := range s.Captures {
		fmt.Fprintln(w, "  captured", c)
	}
	for _, g := range s.Generated {
		fmt.Fprintln(w, "  client-made, now {{ uuid }}:", g)
	}
	for _, n := range s.Notes {
		fmt.Fprintln(w, "  note:", n)
	}
}

const convertLong = `convert writes a plan from what a browser or curl sent.

har: the requests of a HAR export (browser DevTools, Network tab, "Save
all as HAR") in order, the recorded pauses between them as think steps,
static assets and other hosts left out (--keep-static, --keep-third-party),
cookies left to each user's jar, browser headers dropped. A value a
response handed out and a later request sent back (a CSRF token, a bearer
token, an order id) becomes a capture on the response and a template in
the request; a UUID the client made up becomes {{ uuid }}. What was
captured is listed on stderr.

Only values shaped like tokens and ids are correlated (UUIDs, JWTs, long
letter-and-digit runs, long numbers, and what the response names an id
or a token); plain words and small numbers stay as recorded.

curl: one request from a curl command line ("Copy as cURL" works). Every
header typed is kept, user:password@ and -u become Basic authentication,
-F becomes multipart:, other curl options' values are skipped, and -T is
refused.

jmx: an Apache JMeter test plan: thread groups (standard, stepping,
concurrency) become load stages, HTTP samplers with their defaults and
header managers request steps, CSV data sets data sources, extractors
captures, assertions expect, timers think steps, JMeter properties
${NAME:-default} environment references. What is not converted is listed
in the plan's header comment with its place in the test tree.

The plan is checked with the plan loader before it is written.`
