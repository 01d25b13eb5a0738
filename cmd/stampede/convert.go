package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newConvertCmd) }

func newConvertCmd(pr session.Process) *cobra.Command {
	var (
		f              session.ConvertFlags
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
		RunE: func(_ *cobra.Command, args []string) error {
			f.Kind, f.Arg, f.AllowFiles = args[0], args[1], allowFiles
			f.Options.KeepStatic, f.Options.KeepThirdParty, f.Options.NoCorrelate = keepStatic, keepThirdParty, noCorrelate
			return session.Convert(pr, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.Out, "out", "o", "", "write the plan to this file (default stdout)")
	fl.StringVar(&f.Options.Name, "name", "", "plan and scenario name (default recording)")
	fl.StringVar(&f.Options.Host, "host", "", "the application's host[:port] (default: the first non-static request's)")
	fl.BoolVar(&keepStatic, "keep-static", false, "keep static assets (scripts, styles, images, fonts)")
	fl.BoolVar(&keepThirdParty, "keep-third-party", false, "keep requests to other hosts than --host")
	fl.BoolVar(&noCorrelate, "no-correlate", false, "send every value as recorded (no captures)")
	fl.DurationVar(&f.Options.MinThink, "min-think", 100*time.Millisecond, "recorded gaps shorter than this get no think step")
	fl.IntVar(&f.Options.Users, "users", 1, "users of the plan's load stage")
	fl.DurationVar(&f.Options.Duration, "duration", time.Minute, "duration of the plan's load stage")
	return cmd
}

const convertLong = `convert writes a plan from what a browser or curl sent.

har: the requests of a HAR export (browser DevTools, Network tab, "Save
all as HAR") in order, the recorded pauses between them as think steps,
static assets and other hosts left out (--keep-static, --keep-third-party),
cookies left to each user's jar, browser headers dropped. A value a
response handed out and a later request sent back (a CSRF token, a bearer
token, an order id) becomes a capture on the response and a template in
the request, also when it came inside a Location header, a link or a
longer value; a UUID no response handed out, which the client made up,
becomes {{ uuid }}. What was captured is listed on stderr.

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
