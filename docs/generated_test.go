package docs

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs from the code")

// checkGenerated compares the part of file between the begin and end
// marker lines with want; with -update it writes want there instead.
// Markers keep hand-written prose around a generated table.
func checkGenerated(t *testing.T, file, marker, want string) {
	t.Helper()
	begin := "<!-- BEGIN " + marker + " -->\n"
	end := "<!-- END " + marker + " -->"
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(old, []byte(begin))
	j := bytes.Index(old, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q markers around the generated part", file, strings.TrimSpace(begin), end)
	}
	have := string(old[i+len(begin) : j])
	if have == want {
		return
	}
	if *update {
		out := append(append(append([]byte{}, old[:i+len(begin)]...), want...), old[j:]...)
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the code (go test ./docs/ -run %s -update rewrites it); first difference:\n%s",
		file, t.Name(), firstDifference(have, want))
}

func firstDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(h) || i < len(w); i++ {
		var a, b string
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n  docs: " + a + "\n  code: " + b
		}
	}
	return "(none)"
}
