package dist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The merge keeps the earliest perStep samples of each step across the
// segments' files, in time order: steps told apart by step_index even
// when they share a name, by name in a file that has no index; a missing
// file adds nothing.
func TestMergeFailuresPerStep(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	line := func(sec, step string, idx string) string {
		s := `{"time":"2026-01-01T00:00:0` + sec + `Z","scenario":"s","step":"` + step + `"`
		if idx != "" {
			s += `,"step_index":` + idx
		}
		return s + `,"class":"server_error"}`
	}
	a := write("seg-0.failures.jsonl", line("1", "x", "0"), line("3", "x", "0"), line("5", "x", "1"), line("7", "x", "1"))
	b := write("seg-1.failures.jsonl", line("2", "x", "0"), line("4", "x", "1"), line("6", "x", "1"))
	old := write("old.failures.jsonl", line("0", "y", ""), line("8", "y", ""), line("9", "y", ""))
	dst := filepath.Join(dir, "r.failures.jsonl")
	n, err := MergeFailures(dst, []string{a, b, filepath.Join(dir, "missing.jsonl"), old}, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{line("0", "y", ""), line("1", "x", "0"), line("2", "x", "0"),
		line("4", "x", "1"), line("5", "x", "1"), line("8", "y", "")}, "\n") + "\n"
	if n != 6 || string(got) != want {
		t.Errorf("%d samples:\n%s\nwant 6:\n%s", n, got, want)
	}
}

// The setup's, teardown's and load's step 0 are three steps: the merge
// keeps perStep of each (phase, step_index), a line without a phase being
// the load's. Before, it keyed on step_index alone, so a teardown's
// samples took the load's step 0's share. With no sample at all there is
// no file, not an empty one, and an older one is removed.
func TestMergeFailuresByPhase(t *testing.T) {
	dir := t.TempDir()
	line := func(sec, phase string) string {
		s := `{"time":"2026-01-01T00:00:0` + sec + `Z","scenario":"s","step":"x"`
		if phase != "" {
			s += `,"phase":"` + phase + `"`
		}
		return s + `,"step_index":0,"class":"server_error"}`
	}
	src := filepath.Join(dir, "seg-0.failures.jsonl")
	lines := []string{line("1", ""), line("2", "load"), line("3", "setup"), line("4", "teardown"), line("5", "teardown")}
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "r.failures.jsonl")
	n, err := MergeFailures(dst, []string{src}, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	want := strings.Join([]string{line("1", ""), line("3", "setup"), line("4", "teardown")}, "\n") + "\n"
	if n != 3 || string(got) != want {
		t.Errorf("%d samples:\n%s\nwant 3:\n%s", n, got, want)
	}
	if n, err := MergeFailures(dst, []string{filepath.Join(dir, "none.jsonl")}, 1); err != nil || n != 0 {
		t.Fatalf("no samples: %d, %v", n, err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("%s is there with no sample", dst)
	}
}
