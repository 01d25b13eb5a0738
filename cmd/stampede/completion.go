package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// formatChoices are the --format values of each command that has one, for
// shell completion. A test holds every --format flag to an entry here and
// every value to the flag's own help text.
var formatChoices = map[string][]string{
	"stampede gates":     {"text", "md"},
	"stampede sweep":     {"text", "md"},
	"stampede report":    {"text", "md", "html", "json", "junit"},
	"stampede compare":   {"text", "md", "html"},
	"stampede url":       {"text", "json"},
	"stampede k8s gates": {"text", "md"},
	"stampede k8s sweep": {"text", "md"},
}

// outputKinds are --output's KIND= prefixes; the target after them is the
// user's to type, so the shell adds no space.
var outputKinds = []string{
	"csv=\tper-second series to a CSV file",
	"prometheus-rw=\tPrometheus remote write URL",
	"otlp=\tOpenTelemetry OTLP/HTTP endpoint",
}

// registerValueCompletion makes `stampede completion SHELL` scripts
// complete the values of --format and --output, wherever those flags are.
func registerValueCompletion(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		if c.Flags().Lookup("format") != nil {
			completeFormat(c, formatChoices[c.CommandPath()])
		}
		if c.Flags().Lookup("output") != nil {
			_ = c.RegisterFlagCompletionFunc("output", completeOutput)
		}
	})
}

// completeFormat offers a command's formats after --format. A command
// that parses its own flags (compare) gets no flag completion from cobra,
// so its arguments are read here: after --format come the formats, and
// anywhere else the files the shell would offer.
func completeFormat(c *cobra.Command, values []string) {
	formats := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
	if !c.DisableFlagParsing {
		_ = c.RegisterFlagCompletionFunc("format", formats)
		return
	}
	if c.ValidArgsFunction != nil {
		return
	}
	c.ValidArgsFunction = func(c *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 && args[len(args)-1] == "--format" {
			return formats(c, args, typed)
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
}

// completeOutput offers the kinds until one is typed, then the files
// for csv= (its target is a file) and nothing for the URL kinds.
func completeOutput(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	if kind, _, ok := strings.Cut(typed, "="); ok {
		if kind == "csv" {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return outputKinds, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

func walk(c *cobra.Command, visit func(*cobra.Command)) {
	visit(c)
	for _, sub := range c.Commands() {
		walk(sub, visit)
	}
}
