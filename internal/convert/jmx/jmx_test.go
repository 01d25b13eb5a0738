package jmx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// convertFile converts a fixture, reading its data files beside it.
func convertFile(t *testing.T, name string) (string, Result) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	out, res, err := Convert(data, Options{Source: name, ReadFile: func(f string) ([]byte, error) {
		return os.ReadFile(filepath.Join("testdata", f))
	}})
	if err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	return string(out), res
}

func mustContain(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in:\n%s", w, text)
		}
	}
}
