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
