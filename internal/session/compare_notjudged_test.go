package session

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// compare --fail-on-worse passes a run it could not judge (exit 0, as
// documented), and says so on stderr: a CI log that said nothing read as
// "no worse". Before, it said nothing.
func TestCompareFailOnWorseWarnsOfRunsNotJudged(t *testing.T) {
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json")
	other := res(10, false, "")
	other.Plan.SHA256 = "ef01"
	for p, r := range map[string]*result.Result{before: res(10, false, ""), after: other} {
		if err := result.Write(p, r); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := Compare(Process{Stdout: &stdout, Stderr: &stderr}, CompareFlags{Files: []string{before, after}, Format: "text", FailOnWorse: true})
	if err != nil {
		t.Fatalf("compare: %v, want exit 0 for a run not judged", err)
	}
	if got := stderr.String(); !strings.Contains(got, "after was not judged against before") || !strings.Contains(got, "--fail-on-worse does not fail it") {
		t.Errorf("stderr %q: want a warning naming the run not judged", got)
	}
}
