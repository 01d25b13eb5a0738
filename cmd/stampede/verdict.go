package main

import "github.com/stampede-load/stampede/internal/gate"

// verdictErr turns the verdict every judging command draws from
// gate.Judge into its exit code.
func verdictErr(v gate.Verdict) error {
	switch v {
	case gate.Incomplete:
		return fail(exitRun, nil)
	case gate.Fail:
		return fail(exitThreshold, nil)
	}
	return nil
}
