package main

import (
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/session"
)

// outputFlags are --output, --junit and --dashboard, shared by run, gates
// and sweep.
type outputFlags session.Outputs

func (o *outputFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Streams, "output", nil, "stream the run while it goes (repeatable): csv=FILE (per-second series), prometheus-rw=URL (remote write, e.g. http://127.0.0.1:9090/api/v1/write), otlp=URL (OTLP/HTTP, e.g. http://127.0.0.1:4318)")
	f.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report (thresholds, SLOs, step checks; one suite per level) to this file for CI")
	addStreamLabelFlags(f, (*session.Outputs)(o))
	f.StringVar(&o.TokenFile, "output-token-file", "", "a file holding the bearer token for prometheus-rw and otlp (default: $"+session.OutputTokenEnv+")")
	addDashboard(f, &o.Dashboard, "serve a live dashboard (the HTML report, updated every second) on "+session.DashboardAddr+", or on --dashboard=ADDR")
}

// addDashboard is --dashboard; capacity has it alone: its levels are
// found as it goes, which the JUnit and streaming outputs do not describe
// yet.
func addDashboard(f *pflag.FlagSet, addr *string, usage string) {
	f.StringVar(addr, "dashboard", "", usage)
	f.Lookup("dashboard").NoOptDefVal = session.DashboardAddr
}

// addStreamLabelFlags are what names a run's series and reaches its
// receiver, alike for a local run and for the pods of k8s.
func addStreamLabelFlags(f *pflag.FlagSet, o *session.Outputs) {
	f.StringVar(&o.TestID, "testid", "", "the run's id, the testid label on every prometheus-rw and otlp series (default: the start time and a random tail, printed)")
	f.StringArrayVar(&o.Labels, "label", nil, "a label NAME=VALUE on every prometheus-rw and otlp series (repeatable, each NAME once), e.g. env=staging")
	f.StringArrayVar(&o.Headers, "output-header", nil, "an HTTP header 'Name: value' on every prometheus-rw and otlp push (repeatable; ${NAME} in the value is read from the environment)")
}

// addPodOutputFlags are k8s PLAN's streams: each pod pushes its own
// segment, labelled with it, under the one --testid of the run.
func addPodOutputFlags(f *pflag.FlagSet, o *session.Outputs) {
	f.StringArrayVar(&o.Streams, "output", nil, "each pod streams its segment while it runs (repeatable): prometheus-rw=URL or otlp=URL, reachable from the pods; a bearer token goes in the --env-from-secret Secret as "+session.OutputTokenEnv)
	addStreamLabelFlags(f, o)
}
