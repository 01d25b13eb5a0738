package main

import (
	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newSchemaCmd) }

// newSchemaCmd prints the plan's JSON Schema, for editors: saved beside
// the plans, a `# yaml-language-server: $schema=PATH` first line lets VS
// Code's YAML extension complete and check them.
func newSchemaCmd(session.Process) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of plans, for editors",
		Long: `schema prints the JSON Schema (draft 2020-12) of a plan: every key the
parser accepts, its type, allowed values and description. Save it and put
  # yaml-language-server: $schema=stampede.schema.json
as a plan's first line, and VS Code's YAML extension (or any editor with
yaml-language-server) completes and checks the plan as you type.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(plan.Schema())
			return err
		},
	}
}
