package session

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stampede-load/stampede/internal/convert"
	"github.com/stampede-load/stampede/internal/plan"
)

// ConvertFlags is one `stampede convert`: what to convert (Kind har, curl
// or jmx, and Arg, a file or the curl command line), where the plan goes
// (Out; empty or "-" is stdout) and the converter's options.
type ConvertFlags struct {
	Kind, Arg, Out string
	Options        convert.Options
	// AllowFiles are the --allow-files directories a curl command's
	// files may be read from.
	AllowFiles []string
}

// Convert writes the plan a recording, a curl command or a JMeter plan
// becomes, checked with the plan loader first, and says on stderr what
// was converted and what was left out.
func Convert(pr Process, f ConvertFlags) error {
	var (
		text []byte
		sum  convert.Summary
		err  error
	)
	switch f.Kind {
	case "har":
		data, rerr := os.ReadFile(f.Arg)
		if rerr != nil {
			return Fail(ExitUsage, rerr)
		}
		f.Options.Source = f.Arg
		text, sum, err = convert.HAR(data, f.Options)
	case "curl":
		f.Options.AllowFiles = f.AllowFiles
		text, sum, err = convert.Curl(f.Arg, f.Options)
	case "jmx":
		return convertJMX(pr, f)
	default:
		return Fail(ExitUsage, fmt.Errorf("convert %q: expected har, curl or jmx", f.Kind))
	}
	if err != nil {
		return Fail(ExitUsage, err)
	}
	// A plan that does not load is the converter's bug, not the user's:
	// say so rather than write it. Its ${ENV} references (curl's
	// credentials) are the user's to set; its files are the ones curl
	// read here.
	name := f.Out
	if name == "" {
		name = "converted.yaml"
	}
	anyEnv := func(string) (string, bool) { return "set-by-the-user", true }
	loadOpts := plan.LoadOptions{AllowFiles: append([]string{"."}, f.AllowFiles...)}
	if _, perr := plan.ParseWith(name, text, anyEnv, loadOpts); perr != nil {
		return Fail(ExitUsage, fmt.Errorf("the converted plan does not load (please report this): %v", perr))
	}
	dest, err := writePlan(pr, f.Out, text)
	if err != nil {
		return err
	}
	summarizeConversion(pr.Stderr, sum, dest)
	return nil
}

// writePlan writes a converted plan to out, or to stdout, and names where
// it went.
func writePlan(pr Process, out string, text []byte) (string, error) {
	if out == "" || out == "-" {
		if _, err := pr.Stdout.Write(text); err != nil {
			return "", Fail(ExitRun, err)
		}
		return "stdout", nil
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		return "", Fail(ExitUsage, err)
	}
	return out, nil
}

func summarizeConversion(w io.Writer, s convert.Summary, dest string) {
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

// convertJMX converts a JMeter test plan; the converter checks the plan
// with the plan loader itself (its ${ENV:-default} references, JMeter's
// properties, must load with their defaults, and its data files are the
// user's to bring).
func convertJMX(pr Process, f ConvertFlags) error {
	data, err := os.ReadFile(f.Arg)
	if err != nil {
		return Fail(ExitUsage, err)
	}
	dir := filepath.Dir(f.Arg)
	text, res, err := convert.JMX(data, convert.JMXOptions{
		Source: f.Arg, Name: f.Options.Name, Duration: f.Options.Duration, DataDir: jmxDataDir(dir, f.Out),
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
		printJMXLists(pr.Stderr, res)
		return Fail(ExitUsage, err)
	}
	dest, err := writePlan(pr, f.Out, text)
	if err != nil {
		return err
	}
	w := pr.Stderr
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

// jmxDataDir is the .jmx's directory relative to the plan's: JMeter reads
// a data set's file relative to the .jmx, a plan relative to itself.
func jmxDataDir(jmxDir, out string) string {
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
