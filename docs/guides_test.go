package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

// Every whole plan a guide shows (a YAML block that starts with name:)
// must load: a reader copies them.
func TestGuidePlansLoad(t *testing.T) {
	files, err := filepath.Glob("guides/*.md")
	if err != nil {
		t.Fatal(err)
	}
	plans := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range strings.Split(string(b), "```yaml\n")[1:] {
			src, _, _ := strings.Cut(block, "```")
			if !strings.HasPrefix(src, "name:") {
				continue
			}
			plans++
			if _, err := plan.Parse(file, []byte(src), func(string) (string, bool) { return "", false }); err != nil {
				t.Errorf("%s: plan %d does not load:\n%v", file, i+1, err)
			}
		}
	}
	if plans < 2 {
		t.Fatalf("found %d whole plans in the guides", plans)
	}
}
