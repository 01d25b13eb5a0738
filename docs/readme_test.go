package docs

import (
	"os"
	"strings"
	"testing"
)

// The README's quick start gives a newcomer two commands: the first run
// and the test suite. CI (.ci/run) must run exactly the test command the
// README gives, and both must stay near the top, where a newcomer looks.
func TestReadmeQuickStartCommands(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	block := quickStartBlock(t, string(readme))
	var run, test string
	for _, l := range strings.Split(block, "\n") {
		cmd := strings.TrimSpace(strings.SplitN(l, "#", 2)[0])
		switch {
		case strings.HasPrefix(cmd, "go run ./cmd/stampede run "):
			run = cmd
		case strings.HasPrefix(cmd, "go test"):
			test = cmd
		}
	}
	if run != "go run ./cmd/stampede run examples/quickstart.yaml" {
		t.Errorf("README quick start runs %q, want the quickstart example", run)
	}
	if test == "" {
		t.Fatal("README quick start has no go test command")
	}
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	if last := lines[len(lines)-1]; last != test {
		t.Errorf(".ci/run ends with %q, the README's test command is %q: CI must run exactly the README's", last, test)
	}
	if n := strings.Count(string(readme), "\n"); n >= 400 {
		t.Errorf("README.md has %d lines: keep it under 400 and move detail into docs/", n)
	}
}

// quickStartBlock is the first fenced block after the Quick start heading,
// which must come within the README's first 30 lines.
func quickStartBlock(t *testing.T, readme string) string {
	t.Helper()
	lines := strings.Split(readme, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "## Quick start") {
			continue
		}
		if i > 30 {
			t.Errorf("the Quick start heading is on line %d: keep it near the top", i+1)
		}
		start := -1
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				if start >= 0 {
					return strings.Join(lines[start+1:j], "\n")
				}
				start = j
			}
		}
	}
	t.Fatal("README.md has no Quick start section with a code block")
	return ""
}
