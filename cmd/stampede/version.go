package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is stamped by release builds and the Dockerfile with
// -ldflags "-X main.version=...". Left empty, the binary describes itself
// from the build information the go command records, so a `go install` or
// a build from a checkout still says what it is.
var version string

// buildVersion is the version this binary reports: the stamped one, or
// one read from its build information.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return describeBuild(version, bi)
}

// describeBuild gives the stamped version when there is one; otherwise
// the module version (a tag for `go install ...@v1.2.3`, "devel" for a
// build from a checkout) and, where the go command recorded it, the VCS
// revision and whether the tree had uncommitted changes.
func describeBuild(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if bi == nil {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if modified {
		return fmt.Sprintf("%s (%s, modified)", v, rev)
	}
	return fmt.Sprintf("%s (%s)", v, rev)
}

// addVersion gives the root both ways of asking: `stampede --version`
// and `stampede version`, printing the same line.
// An embedding Process without a version gets this binary's.
func addVersion(root *cobra.Command, v string) {
	if v == "" {
		v = buildVersion()
	}
	root.Version = v
	root.SetVersionTemplate("stampede {{.Version}}\n")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "stampede", v)
			return nil
		},
	})
}
