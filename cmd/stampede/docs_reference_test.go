package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/session"
)

var updateCLIReference = flag.Bool("update", false, "rewrite docs/reference/cli.md from the commands")

const cliReference = "../../docs/reference/cli.md"

// rootForDocs is the command tree the reference describes: the one main
// runs.
func rootForDocs() *cobra.Command { return newRoot(session.Process{}) }

// TestReferenceCLI keeps docs/reference/cli.md equal to what the commands
// define: every command, its usage line and every flag with its type,
// default and help text. -update rewrites the file.
func TestReferenceCLI(t *testing.T) {
	want := cliMarkdown(rootForDocs())
	have, err := os.ReadFile(cliReference)
	if err == nil && string(have) == want {
		return
	}
	if *updateCLIReference {
		if err := os.WriteFile(cliReference, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("%s is out of date with the commands; go test ./cmd/stampede/ -run TestReferenceCLI -update rewrites it. First difference:\n%s",
		cliReference, firstLineDifference(string(have), want))
}

func firstLineDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(h) || i < len(w); i++ {
		var a, b string
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  docs: %s\n  code: %s", i+1, a, b)
		}
	}
	return "(none)"
}

func cliMarkdown(root *cobra.Command) string {
	var b bytes.Buffer
	b.WriteString("# CLI reference\n\n")
	b.WriteString("Generated from the commands themselves by `TestReferenceCLI`\n")
	b.WriteString("(cmd/stampede/docs_reference_test.go), which fails when a command or flag\n")
	b.WriteString("changes and this page does not; `go test ./cmd/stampede/ -run\n")
	b.WriteString("TestReferenceCLI -update` rewrites it. What the commands do, exit codes\n")
	b.WriteString("and the Ctrl-C policy: [commands](commands.md). Every command also has\n")
	b.WriteString("`--help`.\n\n")
	b.WriteString("## Global flags\n\nAccepted by every command.\n\n")
	writeFlags(&b, root.PersistentFlags())
	for _, cmd := range visibleCommands(root) {
		fmt.Fprintf(&b, "\n## `%s`\n\n", cmd.CommandPath())
		if cmd.Short != "" {
			fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(cmd.Short, "."))
		}
		fmt.Fprintf(&b, "```\n%s\n```\n\n", cmd.UseLine())
		if len(cmd.Aliases) > 0 {
			fmt.Fprintf(&b, "Aliases: %s.\n\n", strings.Join(cmd.Aliases, ", "))
		}
		writeFlags(&b, cmd.LocalNonPersistentFlags())
	}
	return b.String()
}

// visibleCommands lists the tree below root depth first, by name,
// leaving out hidden commands.
func visibleCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	children := append([]*cobra.Command{}, root.Commands()...)
	sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
	for _, c := range children {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		out = append(out, c)
		out = append(out, visibleCommands(c)...)
	}
	return out
}

func writeFlags(b *bytes.Buffer, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		switch {
		case def == "" || def == "[]" || (def == "false" && f.Value.Type() == "bool"):
			def = ""
		default:
			def = "`" + def + "`"
		}
		usage := mdCell(f.Usage)
		if f.NoOptDefVal != "" && f.Value.Type() != "bool" {
			usage += " (given without a value: `" + f.NoOptDefVal + "`)"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", name, f.Value.Type(), def, usage))
	})
	if len(rows) == 0 {
		b.WriteString("No flags of its own.\n")
		return
	}
	b.WriteString("| flag | type | default | what it does |\n|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
