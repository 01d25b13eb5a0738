package gate

import "github.com/stampede-load/stampede/internal/result"

// Verdict is what a finished command says about its run, through its exit
// code: every command that judges a run (run, merge, sweep, gates,
// capacity) draws it here, so one run cannot pass under one command and
// fail under another.
type Verdict int

const (
	// Pass: the run completed and met every threshold and gate.
	Pass Verdict = iota
	// Fail: a threshold, an SLO or a gate failed (exit code 1).
	Fail
	// Incomplete: the run stopped before its end (exit code 3). It outranks
	// Fail, since thresholds judged on part of a run judge the wrong thing.
	Incomplete
)

// Outcome is what a verdict is drawn from.
type Outcome struct {
	// Incomplete is set when the run this command made stopped before its
	// end: Ctrl-C, a lost worker, an interrupted level. A merge makes no
	// run of its own and leaves it unset; the merged result still says
	// whether an input was partial.
	Incomplete bool
	// Thresholds are the judged thresholds; one that failed or could not
	// be evaluated fails the run.
	Thresholds []result.Threshold
	// LevelFailed is set when a level of a sweep, of gates or of a
	// capacity search failed its SLO.
	LevelFailed bool
}

// Judge draws the verdict from an outcome.
func Judge(o Outcome) Verdict {
	switch {
	case o.Incomplete:
		return Incomplete
	case o.LevelFailed || !AllPass(o.Thresholds):
		return Fail
	}
	return Pass
}
