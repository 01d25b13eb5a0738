package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/session"
)

// complete runs cobra's hidden __complete command, as the shell scripts
// from `stampede completion` do, and returns the offered values and the
// directive line.
func complete(t *testing.T, args ...string) (values []string, directive string) {
	t.Helper()
	root := newRoot(session.Process{})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(line, ":") {
			directive = line
			continue
		}
		value, _, _ := strings.Cut(line, "\t")
		values = append(values, value)
	}
	return values, directive
}

// Before, --format and --output completed to nothing (or to file names).
func TestCompletionOfFormatAndOutput(t *testing.T) {
	if got, _ := complete(t, "report", "r.json", "--format", ""); !slices.Equal(got, []string{"text", "md", "html", "json", "junit"}) {
		t.Errorf("report --format completes %q", got)
	}
	if got, _ := complete(t, "sweep", "p.yaml", "--format", "m"); !slices.Contains(got, "md") {
		t.Errorf("sweep --format m completes %q", got)
	}
	// compare parses its own flags; its --format completes all the same.
	if got, _ := complete(t, "compare", "a.json", "b.json", "--format", ""); !slices.Equal(got, []string{"text", "md", "html"}) {
		t.Errorf("compare --format completes %q", got)
	}
	got, directive := complete(t, "run", "p.yaml", "--output", "")
	if !slices.Equal(got, []string{"csv=", "prometheus-rw=", "otlp="}) {
		t.Errorf("run --output completes %q", got)
	}
	// NoSpace (2) | NoFileComp (4): the target follows the kind directly.
	if directive != ":6" {
		t.Errorf("run --output directive %q, want :6", directive)
	}
	if got, directive := complete(t, "gates", "p.yaml", "--output", "otlp="); len(got) != 0 || directive != ":4" {
		t.Errorf("gates --output otlp= completes %q %s, want nothing and no files", got, directive)
	}
}

// Every --format flag has its values listed for completion, each one named
// in the flag's own help, so a new command or format cannot be missed.
func TestFormatChoicesCoverEveryFormatFlag(t *testing.T) {
	seen := map[string]bool{}
	walk(newRoot(session.Process{}), func(c *cobra.Command) {
		f := c.Flags().Lookup("format")
		if f == nil {
			return
		}
		path := c.CommandPath()
		seen[path] = true
		values, ok := formatChoices[path]
		if !ok {
			t.Errorf("%s has --format but no formatChoices entry", path)
		}
		for _, v := range values {
			if !strings.Contains(f.Usage, v) {
				t.Errorf("%s --format: completion offers %q, which its help (%q) does not name", path, v, f.Usage)
			}
		}
	})
	for path := range formatChoices {
		if !seen[path] {
			t.Errorf("formatChoices has %s, which has no --format flag", path)
		}
	}
}
