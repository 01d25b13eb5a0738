package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/output"
	"github.com/stampede-load/stampede/internal/output/csv"
	"github.com/stampede-load/stampede/internal/output/dashboard"
	"github.com/stampede-load/stampede/internal/output/junitfile"
	"github.com/stampede-load/stampede/internal/output/otlp"
	"github.com/stampede-load/stampede/internal/output/promrw"
	"github.com/stampede-load/stampede/internal/plan"
)

// outputFlags are --output, --junit and --dashboard, shared by run, gates
// and sweep. One command runs per process, so one set serves whichever it
// is.
type outputFlags struct {
	outs      []string
	junit     string
	dashboard string

	// dash is the dashboard sinks opened, to be told the planned profile.
	dash *dashboard.Sink
}

var outputs outputFlags

func (o *outputFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&o.outs, "output", nil, "stream the run while it goes (repeatable): csv=FILE (per-second series), prometheus-rw=URL (remote write, e.g. http://127.0.0.1:9090/api/v1/write), otlp=URL (OTLP/HTTP, e.g. http://127.0.0.1:4318)")
	f.StringVar(&o.junit, "junit", "", "write a JUnit XML report (thresholds, SLOs, step checks; one suite per level) to this file for CI")
	f.StringVar(&o.dashboard, "dashboard", "", "serve a live dashboard (the HTML report, updated every second) on "+dashboard.DefaultAddr+", or on --dashboard=ADDR")
	f.Lookup("dashboard").NoOptDefVal = dashboard.DefaultAddr
}

// addDashboard is --dashboard alone, for capacity: its levels are found as
// it goes, which the JUnit and streaming outputs do not describe yet.
func (o *outputFlags) addDashboard(f *pflag.FlagSet) {
	f.StringVar(&o.dashboard, "dashboard", "", "serve a live dashboard (the HTML report, updated every second, with each rate tried) on "+dashboard.DefaultAddr+", or on --dashboard=ADDR")
	f.Lookup("dashboard").NoOptDefVal = dashboard.DefaultAddr
}

// sinks opens every output the flags name; a bad one is a usage error
// before any load, and those already opened are closed again.
func (o *outputFlags) sinks(stderr io.Writer) ([]output.Sink, error) {
	var out []output.Sink
	bad := func(err error) ([]output.Sink, error) {
		closeSinks(out)
		return nil, fail(exitUsage, err)
	}
	for _, spec := range o.outs {
		kind, target, ok := strings.Cut(spec, "=")
		if !ok || target == "" {
			return bad(fmt.Errorf("--output %q: expected KIND=TARGET, with KIND csv, prometheus-rw or otlp", spec))
		}
		var (
			s   output.Sink
			err error
		)
		switch kind {
		case "csv":
			s, err = csv.New(spec, target)
		case "prometheus-rw":
			s, err = promrw.New(spec, target)
		case "otlp":
			s, err = otlp.New(spec, target, version)
		default:
			err = fmt.Errorf("--output %q: unknown kind %q, expected csv, prometheus-rw or otlp", spec, kind)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--output") {
				err = fmt.Errorf("--output %s: %v", spec, err)
			}
			return bad(err)
		}
		out = append(out, s)
	}
	if o.dashboard != "" {
		d, err := dashboard.New(o.dashboard)
		if err != nil {
			return bad(err)
		}
		fmt.Fprintf(stderr, "dashboard: %s\n", d.URL())
		out = append(out, d)
		o.dash = d
	}
	if o.junit != "" {
		s, err := junitfile.New(o.junit)
		if err != nil {
			return bad(err)
		}
		out = append(out, s)
	}
	return out, nil
}

// planStages gives the dashboard, if one is open, the load a run plans.
func (o *outputFlags) planStages(l plan.Load) {
	if o.dash != nil {
		o.dash.SetProfile(dashboard.StagesProfile(l))
	}
}

// planLevels gives the dashboard, if one is open, the levels a gates or
// sweep run plans; a capacity search (no values) finds its own.
func (o *outputFlags) planLevels(vary string, values []float64, ramp, hold time.Duration) {
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
