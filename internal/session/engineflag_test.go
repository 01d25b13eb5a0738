package session

import (
	"bytes"
	"strings"
	"testing"
)

// An --engine no engine has is a usage error (exit 2) for run and url,
// refused before a plan is read; before, it surfaced from the run as a
// run failure (exit 3).
func TestUnknownEngineIsAUsageError(t *testing.T) {
	var stderr bytes.Buffer
	pr := Process{Stdout: &bytes.Buffer{}, Stderr: &stderr}
	for name, err := range map[string]error{
		"run": pr.Run(RunRequest{PlanFile: "no-such-plan.yaml", Engine: "bogus"}),
		"url": pr.URL(URLRequest{URL: "http://127.0.0.1:9/", Conns: 1, Engine: "bogus"}),
	} {
		if got := exitCode(t, err); got != ExitUsage {
			t.Errorf("%s: exit %d (%v), want %d", name, got, err, ExitUsage)
		}
		if !strings.Contains(err.Error(), `--engine "bogus"`) {
			t.Errorf("%s: %v, want it to name the flag", name, err)
		}
	}
}
