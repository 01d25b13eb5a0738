package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failure log makes its file with its first sample: a run that failed
// nothing leaves none (before, an empty one), and a previous run's file
// is gone at once. Each recorder's samples say their phase, and each
// recorder counts its own steps' share: the setup's step 0 does not use
// up the load's.
func TestFailureLogFileAndPhases(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.failures.jsonl")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := OpenFailureLog(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a previous run's samples are still there after the log opened")
	}
	steps := []StepInfo{{Scenario: "s", Name: "x"}}
	setup, load := New(steps, 1), New(steps, 1)
	setup.Configure(ErrorOptions{Failures: log, Phase: PhaseSetup})
	load.Configure(ErrorOptions{Failures: log})
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a log with no sample made a file")
	}

	log, err = OpenFailureLog(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	setup.Configure(ErrorOptions{Failures: log, Phase: PhaseSetup})
	load.Configure(ErrorOptions{Failures: log})
	for _, r := range []*Recorder{setup, load, load} {
		if l := r.Shard(0).Failures(); l.Want(0) {
			l.Add(0, &Exchange{Scenario: "s", Step: "x"})
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var x Exchange
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatal(err)
		}
		phases = append(phases, x.Phase)
	}
	if strings.Join(phases, ",") != "setup,load" || log.Written() != 2 {
		t.Errorf("phases %v, %d written; want setup,load: one of each phase's step 0", phases, log.Written())
	}
}
