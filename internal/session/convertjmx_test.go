package session

import (
	"path/filepath"
	"testing"
)

// A data set's file, named relative to the .jmx, is named relative to the
// plan where the plan is written elsewhere.
func TestConvertJMXDataDir(t *testing.T) {
	for _, tc := range []struct{ jmxDir, out, want string }{
		{".", "plan.yaml", ""},
		{"tests", "", "tests"},
		{"tests", "-", "tests"},
		{"tests", filepath.Join("tests", "plan.yaml"), ""},
		{"tests/jmeter", filepath.Join("plans", "p.yaml"), "../tests/jmeter"},
	} {
		if got := jmxDataDir(tc.jmxDir, tc.out); got != tc.want {
			t.Errorf("jmxDataDir(%q, %q) = %q, want %q", tc.jmxDir, tc.out, got, tc.want)
		}
	}
}
