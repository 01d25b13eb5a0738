package session

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// `-o csv=series.csv` is refused before anything is written, pointing to
// --output; before, it saved the JSON result to a file of that name.
func TestResultPathLikeAStreamRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, kind := range streamKinds {
		out := kind + "=series.out"
		s, err := Open(Options{Out: out})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q) accepted a result file named like --output %s", out, out)
		}
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage {
			t.Errorf("Open(%q): %v, want a usage error", out, err)
		}
		if !strings.Contains(err.Error(), "--output "+out) {
			t.Errorf("Open(%q): %q does not point to --output %s", out, err, out)
		}
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Errorf("Open(%q) left a file behind: %v", out, statErr)
		}
	}
	// A name that is no kind, and the explicit ./ form, stay files.
	for _, out := range []string{"run=a.json", "./csv=series.csv", "./json=a.json"} {
		s, err := Open(Options{Out: out})
		if err != nil {
			t.Fatalf("Open(%q): %v", out, err)
		}
		s.Close()
	}
}

// The kinds refused as result files are exactly those --output opens.
func TestStreamKindsAreOutputKinds(t *testing.T) {
	for _, kind := range streamKinds {
		_, err := streamConfig{}.openStream(kind+"=", "test")
		if err == nil || strings.Contains(err.Error(), "unknown kind") {
			t.Errorf("openStream(%s=) = %v: a kind streamKinds lists must be known to --output", kind, err)
		}
	}
	if _, err := (streamConfig{}).openStream("nosuchkind=x", "test"); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("openStream(nosuchkind=x) = %v, want unknown kind", err)
	}
}

// k6's `-o json=out.json` is refused with the stampede form (-o out.json);
// before, the result went silently to a file named "json=out.json".
func TestK6OutputSyntaxRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, out := range []string{"json=out.json", "influxdb=http://127.0.0.1:8086/k6"} {
		s, err := Open(Options{Out: out})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q) accepted k6's output syntax as a result file name", out)
		}
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "k6's output syntax") {
			t.Errorf("Open(%q): %v, want a usage error naming k6's syntax", out, err)
		}
	}
	if _, err := Open(Options{Out: "json=out.json"}); err == nil || !strings.Contains(err.Error(), "write -o out.json") {
		t.Errorf("json=out.json: %v, want it to point to -o out.json", err)
	}
}
