package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/convert"
)

// convertJMX converts a JMeter test plan; the converter checks the plan
// with the plan loader itself (its ${ENV:-default} references, JMeter's
// properties, must load with their defaults, and its data files are the
// user's to bring).
func convertJMX(cmd *cobra.Command, file, out string, o convert.Options) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fail(exitUsage, err)
	}
	dir := filepath.Dir(file)
	text, res, err := convert.JMX(data, convert.JMXOptions{
		Source: file, Name: o.Name, Duration: o.Duration, DataDir: dataDir(dir, out),
		// A CSV data set's file is named relative to the .jmx; only its
		// header row is read, for the column names.
		ReadFile: func(name string) ([]byte, error) {
			if !filepath.IsAbs(name) {
				name = filepath.Join(dir, name)
			}
			return os.ReadFile(name)
		},
	})
	if err != nil {
		// What was left out says why nothing was converted (every
		// thread group disabled, a sampler not HTTP).
		printJMXLists(cmd.ErrOrStderr(), res)
		return fail(exitUsage, err)
	}
	dest := "stdout"
	if out != "" && out != "-" {
		if err := os.WriteFile(out, text, 0o644); err != nil {
			return fail(exitUsage, err)
		}
		dest = out
	} else if _, err := cmd.OutOrStdout().Write(text); err != nil {
		return fail(exitRun, err)
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "convert: %d of %d HTTP samplers to %s written to %s", res.Steps, res.Samplers, res.Target, dest)
	if len(res.Skipped) > 0 {
		fmt.Fprintf(w, "; %d not converted (listed in the plan's header)", len(res.Skipped))
	}
	fmt.Fprintln(w)
	printJMXLists(w, res)
	return nil
}

func printJMXLists(w io.Writer, res convert.JMXResult) {
	for _, n := range res.Notes {
		fmt.Fprintln(w, "  note:", n)
	}
	for _, s := range res.Skipped {
		fmt.Fprintln(w, "  not converted:", s)
	}
}

// dataDir is the .jmx's directory relative to the plan's: JMeter reads a
// data set's file relative to the .jmx, a plan relative to itself.
func dataDir(jmxDir, out string) string {
	planDir := "."
	if out != "" && out != "-" {
		planDir = filepath.Dir(out)
	}
	a, err1 := filepath.Abs(jmxDir)
	b, err2 := filepath.Abs(planDir)
	if err1 != nil || err2 != nil {
		return ""
	}
	rel, err := filepath.Rel(b, a)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}
