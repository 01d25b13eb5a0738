package session

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// Gates that all met their criteria, one on a lagging generator: the last
// line does not say every gate passed. Before, it did, under a table that
// (now) reads SUSPECT for that gate.
func TestGatesPassedNamesSuspectGates(t *testing.T) {
	ls := []result.Level{
		{Vary: "users", Value: 50, Pass: true},
		{Vary: "users", Value: 250, Pass: true, Suspect: "generator lag p99 80ms"},
	}
	got := gatesPassed(ls)
	if strings.Contains(got, "Every gate passed") || !strings.Contains(got, "250 was suspect") {
		t.Errorf("%q: want the suspect gate named, not every gate passed", got)
	}
	if got := gatesPassed(ls[:1]); got != "Every gate passed" {
		t.Errorf("%q for gates none of which was suspect", got)
	}
}
