package main

import (
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/session"
)

// verdictErr turns the verdict every judging command draws from
// gate.Judge into its exit code.
func verdictErr(v gate.Verdict) error { return session.VerdictErr(v) }
