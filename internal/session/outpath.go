package session

import (
	"fmt"
	"slices"
	"strings"
)

// streamKinds are the --output kinds openStream knows.
var streamKinds = []string{"csv", "prometheus-rw", "otlp"}

// checkResultPath refuses a result file named like an --output stream:
// k6 users type `-o csv=series.csv`, which would otherwise save the JSON
// result to a file called "csv=series.csv" and stream nothing. A file
// really meant to be called so can still be named ./csv=series.csv.
func checkResultPath(out string) error {
	kind, target, ok := strings.Cut(out, "=")
	if !ok || !slices.Contains(streamKinds, kind) {
		return nil
	}
	return fmt.Errorf("-o/--out %q names the result file; to stream %s to %s, write --output %s (or -o ./%s for a file of that name)",
		out, kind, target, out, out)
}
