package jmx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Whatever the file, Convert returns a plan that loads or an error; it
// never panics.
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"floor.jmx", "groups.jmx", "samplers.jmx", "checks.jmx"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := Convert(data, Options{})
		if err == nil && !strings.Contains(string(out), "scenarios:") {
			t.Fatalf("no error and no plan:\n%s", out)
		}
		if err != nil && strings.Contains(err.Error(), "does not load") {
			t.Fatalf("converted a plan that does not load: %v", err)
		}
	})
}
