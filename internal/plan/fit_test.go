package plan

import (
	"strings"
	"testing"
)

// Lowering the default max_in_flight to fit the open-files limit is said
// in one line, with both numbers and the limit; before, it was silent and
// the drops it caused had no explanation.
func TestLowerToFitSaysSo(t *testing.T) {
	dflt := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 100/s}]}
`, nil)
	msg := dflt.LowerToFit(1, 1024)
	want := "max_in_flight lowered from 10,000 to 768 to fit the open-files limit (RLIMIT_NOFILE 1,024); set it in the plan to choose"
	if msg != want {
		t.Errorf("notice:\n got %q\nwant %q", msg, want)
	}
	if dflt.Load.MaxInFlight != 1024-ReservedFiles {
		t.Errorf("max_in_flight = %d", dflt.Load.MaxInFlight)
	}
	// Once lowered, checking again changes nothing and says nothing.
	if msg := dflt.LowerToFit(1, 1024); msg != "" {
		t.Errorf("second time: %q", msg)
	}
	if err := dflt.CheckFit(1, 1024); err != nil {
		t.Error(err)
	}

	// Split across processes, each holds its share of the lowered total.
	split := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 100/s}]}
`, nil)
	if msg := split.LowerToFit(4, 2048); !strings.Contains(msg, "to 7,168 ") {
		t.Errorf("4 processes: %q", msg)
	}

	// A max_in_flight the plan sets is the user's choice: never lowered.
	set := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load:
  max_in_flight: 10000
  stages: [{duration: 1s, rate: 100/s}]
`, nil)
	if msg := set.LowerToFit(1, 1024); msg != "" || set.Load.MaxInFlight != 10000 {
		t.Errorf("set in the plan: %q, max_in_flight %d", msg, set.Load.MaxInFlight)
	}
	// Nothing to lower when it fits.
	fits := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 100/s}]}
`, nil)
	if msg := fits.LowerToFit(1, 1<<20); msg != "" {
		t.Errorf("fits: %q", msg)
	}
}

// max_connections_per_host bounds HTTPS connections as well as plain HTTP
// (the net/http transport has MaxConnsPerHost set), so the peak counts the
// cap for an https target too.
func TestPeakOfCapsHTTPS(t *testing.T) {
	p := mustParse(t, `target: https://h
http: {max_connections_per_host: 100}
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 50000}]}
`, nil)
	if k := p.PeakOf(1); k.HTTP != 100 {
		t.Errorf("PeakOf = %+v", k)
	}
}

// CheckFit judges a plan as it would run with its default cap lowered,
// but lowers nothing itself: the caller decides, and says so. Before, it
// lowered the cap silently, so a caller that checked first had nothing
// left to announce.
func TestCheckFitChangesNothing(t *testing.T) {
	p := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 100/s}]}
`, nil)
	was := p.Load.MaxInFlight
	if err := p.CheckFit(1, 1024); err != nil {
		t.Fatalf("a default cap that can be lowered to fit was refused: %v", err)
	}
	if p.Load.MaxInFlight != was {
		t.Errorf("CheckFit changed max_in_flight from %d to %d", was, p.Load.MaxInFlight)
	}
	if msg := p.LowerToFit(1, 1024); msg == "" {
		t.Error("after CheckFit, LowerToFit had nothing left to say")
	}
}
