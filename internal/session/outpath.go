package session

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// streamKinds are the --output kinds openStream knows.
var streamKinds = []string{"csv", "prometheus-rw", "otlp"}

// k6Outputs are k6's -o kinds stampede has no stream of, most often
// `-o json=out.json`: a file named "json=out.json" is never what was meant.
var k6Outputs = []string{"json", "influxdb", "experimental-prometheus-rw", "statsd", "datadog", "cloud", "kafka"}

// checkResultPath refuses a result file named like an --output stream:
// k6 users type `-o csv=series.csv`, which would otherwise save the JSON
// result to a file called "csv=series.csv" and stream nothing. A file
// really meant to be called so can still be named ./csv=series.csv. A
// path that cannot take a result (a directory) is refused here too, before
// any load.
func checkResultPath(out string) error {
	kind, target, ok := strings.Cut(out, "=")
	if ok && slices.Contains(k6Outputs, kind) {
		return fmt.Errorf("-o/--out %q is k6's output syntax; stampede's -o is the JSON result file itself: write -o %s (streams: --output csv=, prometheus-rw= or otlp=)",
			out, target)
	}
	if !ok || !slices.Contains(streamKinds, kind) {
		return result.CheckDestination(out)
	}
	return fmt.Errorf("-o/--out %q names the result file; to stream %s to %s, write --output %s (or -o ./%s for a file of that name)",
		out, kind, target, out, out)
}

// besideResult refuses what keeps files beside the result (RESULT.segments,
// RESULT.failures.jsonl) when the result is a device or a pipe: they would
// be made in /dev, or beside a pipe nobody looks at.
func besideResult(out, what string) error {
	if out != "" && result.IsStream(out) {
		return Fail(ExitUsage, fmt.Errorf("%s keeps its files beside the result file, and -o %s is a device or a pipe: name a regular file", what, out))
	}
	return nil
}
