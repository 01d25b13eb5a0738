package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/output"
	"github.com/stampede-load/stampede/internal/output/csv"
	"github.com/stampede-load/stampede/internal/output/dashboard"
	"github.com/stampede-load/stampede/internal/output/junitfile"
	"github.com/stampede-load/stampede/internal/plan"
)

// DashboardAddr is where --dashboard serves without an address.
const DashboardAddr = dashboard.DefaultAddr

// Outputs are --output, --junit and --dashboard: what hears a run while
// it goes (run, gates, sweep; capacity has only the dashboard).
type Outputs struct {
	Streams   []string // KIND=TARGET: csv, prometheus-rw, otlp
	JUnit     string
	Dashboard string // an address; empty: none
	// TestID is --testid: the run label on every series of the network
	// outputs (generated when empty); Labels are --label NAME=VALUE.
	TestID string
	Labels []string
	// Headers are --output-header 'Name: value'; TokenFile is
	// --output-token-file (else OutputTokenEnv): the receiver's
	// credentials.
	Headers   []string
	TokenFile string
	// Segment is the --segment this process runs (empty: the whole
	// test), set by the command, for the segment label.
	Segment string
}

// openOutputs is what Outputs opened: the sinks, and the dashboard among
// them, to be told the planned profile.
type openOutputs struct {
	sinks []output.Sink
	dash  *dashboard.Sink
	// testID labels the network outputs' series; empty without any.
	testID string
}

// open opens every output o names; a bad one is a usage error before any
// load, and those already opened are closed again.
func (o Outputs) open(pr Process) (*openOutputs, error) {
	oo := &openOutputs{}
	bad := func(err error) (*openOutputs, error) {
		closeSinks(oo.sinks)
		return nil, Fail(ExitUsage, err)
	}
	stderr := pr.Stderr
	c, err := o.streamConfig(pr)
	if err != nil {
		return bad(err)
	}
	network := false
	for _, spec := range o.Streams {
		s, err := c.openStream(spec, pr.Version)
		if err != nil {
			return bad(err)
		}
		oo.sinks = append(oo.sinks, s)
		network = network || !strings.HasPrefix(spec, "csv=")
	}
	if network {
		fmt.Fprintf(stderr, "streaming as testid=%s segment=%s\n", c.run.TestID, c.run.Segment)
		oo.testID = c.run.TestID
	}
	if o.Dashboard != "" {
		d, err := dashboard.New(o.Dashboard)
		if err != nil {
			return bad(err)
		}
		fmt.Fprintf(stderr, "dashboard: %s\n", d.URL())
		oo.sinks = append(oo.sinks, d)
		oo.dash = d
	}
	if o.JUnit != "" {
		s, err := junitfile.New(o.JUnit)
		if err != nil {
			return bad(err)
		}
		oo.sinks = append(oo.sinks, s)
	}
	return oo, nil
}

// openStream opens one --output KIND=TARGET.
func (c streamConfig) openStream(spec, version string) (output.Sink, error) {
	kind, target, ok := strings.Cut(spec, "=")
	if !ok || target == "" {
		return nil, fmt.Errorf("--output %q: expected KIND=TARGET, with KIND csv, prometheus-rw or otlp", spec)
	}
	var (
		s   output.Sink
		err error
	)
	switch kind {
	case "csv":
		s, err = csv.New(spec, target)
	case "prometheus-rw":
		s, err = c.promrw(target)
	case "otlp":
		s, err = c.otlp(target, version)
	default:
		err = fmt.Errorf("--output %q: unknown kind %q, expected csv, prometheus-rw or otlp", spec, kind)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "--output") {
		err = fmt.Errorf("--output %s: %v", shownSpec(kind, target), err)
	}
	return s, err
}

// planStages gives the dashboard, if one is open, the load a run plans.
func (o *openOutputs) planStages(l plan.Load) {
	if o.dash != nil {
		o.dash.SetProfile(dashboard.StagesProfile(l.Model, l.Stages))
	}
}

// planLevels gives the dashboard, if one is open, the levels a gates or
// sweep run plans; a capacity search (no values) finds its own.
func (o *openOutputs) planLevels(vary string, values []float64, ramp, hold time.Duration) {
	if o.dash != nil {
		o.dash.SetProfile(dashboard.LevelsProfile(vary, values, ramp, hold))
	}
}

// closeSinks releases outputs a run never started with.
func closeSinks(ss []output.Sink) {
	for _, s := range ss {
		s.Close(nil)
	}
}
