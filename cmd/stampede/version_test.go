package main

import (
	"bytes"
	"runtime/debug"
	"testing"

	"github.com/stampede-load/stampede/internal/session"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"stamped wins", "1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, "1.2.3"},
		{"go install of a tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"checkout, dirty", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc1234def5678", "true")}, "devel (abc1234, modified)"},
		{"checkout, clean", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc1234def5678", "false")}, "devel (abc1234)"},
		{"pseudo-version with revision", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128-abc1234def56"}, Settings: vcs("abc1234def5678", "false")}, "v0.0.0-20261128-abc1234def56 (abc1234)"},
		{"no build info", "", nil, "devel"},
	}
	for _, c := range cases {
		if got := describeBuild(c.stamped, c.bi); got != c.want {
			t.Errorf("%s: describeBuild = %q, want %q", c.name, got, c.want)
		}
	}
}

// Both spellings print the same line, the flag included.
func TestVersionFlagAndCommand(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		root := newRoot(session.Process{Version: "7.7.7-test"})
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if got := out.String(); got != "stampede 7.7.7-test\n" {
			t.Errorf("%v printed %q, want %q", args, got, "stampede 7.7.7-test\n")
		}
	}
}
