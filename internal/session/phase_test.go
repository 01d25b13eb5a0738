package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// The first Ctrl-C says what it does in the part of the test that runs:
// it cuts the setup off, and it leaves the teardown going. Before, every
// executor printed the load's note ("requests in flight get the grace
// period") in both, which promised what does not happen there.
func TestStopNoteNamesThePhase(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, extra string
		exec              func(p *plan.Plan, dir string) Executor
	}{
		{"in-process setup", "/setup", "setup:\n  - {name: make, post: /setup}", func(p *plan.Plan, _ string) Executor {
			return &InProcess{Plan: p, Options: run.Options{SkipPreflight: true}}
		}},
		{"in-process teardown", "/teardown", "teardown:\n  - {name: clean, delete: /teardown}", func(p *plan.Plan, _ string) Executor {
			return &InProcess{Plan: p, Options: run.Options{SkipPreflight: true}}
		}},
		{"workers setup", "/setup", "setup:\n  - {name: make, post: /setup}", func(p *plan.Plan, dir string) Executor {
			return &Workers{Plan: p, Local: dist.Local{Bin: "/nonexistent/stampede", Plan: "phases.yaml", Workers: 1, Dir: dir},
				Run: &run.Options{SkipPreflight: true}}
		}},
		{"workers teardown", "/teardown", "teardown:\n  - {name: clean, delete: /teardown}", func(p *plan.Plan, dir string) Executor {
			return &Workers{Plan: p, Local: dist.Local{Bin: bin, Environ: os.Environ(), Plan: "phases.yaml", Workers: 1, Dir: dir, StartAt: time.Now()},
				Run: &run.Options{SkipPreflight: true}}
		}},
		{"levels teardown", "/teardown", "teardown:\n  - {name: clean, delete: /teardown}", func(p *plan.Plan, _ string) Executor {
			return &Levels{Plan: p, Vary: plan.VaryUsers, Values: []float64{1},
				Options: levels.Options{Run: run.Options{SkipPreflight: true}, Hold: 100 * time.Millisecond, SLO: []string{"error_rate < 100%"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(fakeWorkerEnv, "1")
			srv := newHangingPhase(t, tc.path)
			p := phasePlan(t, srv.srv.URL, tc.extra)
			notes := make(chan string, 4)
			h := open(t, func(o *Options) { o.Note = func(s string) { notes <- s } })
			ch := runAsync(h, tc.exec(p, filepath.Join(t.TempDir(), "r.segments")))
			wait(t, srv.entered, "the phase's request")
			h.sigs <- os.Interrupt
			note := wait(t, notes, "the stop note")
			setup := tc.path == "/setup"
			switch {
			case setup && note != SetupStopNote:
				t.Errorf("note %q, want %q", note, SetupStopNote)
			case !setup && !strings.HasPrefix(note, "the load is over; the teardown goes on to clean up, for "):
				t.Errorf("note %q, want the teardown's", note)
			}
			if !setup {
				// It says the teardown goes on: it does, to its end.
				srv.Release()
			}
			oc := wait(t, ch, "outcome")
			if setup {
				if !errors.Is(oc.RunErr, run.ErrSetupCut) {
					t.Errorf("outcome %+v: want the setup cut off", oc)
				}
				return
			}
			if oc.Result == nil || oc.Result.Workflow == nil || oc.Result.Workflow.Teardown == nil {
				t.Fatalf("outcome %+v: want a result with its teardown", oc)
			}
			if td := oc.Result.Workflow.Teardown; td.Error != "" || td.Requests != 1 {
				t.Errorf("teardown %+v: want its one request, done", td)
			}
		})
	}
}

// The first Ctrl-C during a teardown says how much of its time limit is
// left, not the whole limit once part has run; during a teardown with no
// load sent it says so rather than "the load is over". Before, it always
// said "30s at most" and "the load is over".
func TestTeardownNoteSaysTheTimeLeft(t *testing.T) {
	s := &Session{o: Options{StopNote: DefaultStopNote}}
	e := &InProcess{}
	e.set(run.PhaseTeardown)
	e.since.Store(time.Now().Add(-run.TeardownTimeout + 10*time.Second).UnixNano())
	if got, want := s.stopNote(e), TeardownStopNote(10*time.Second); got != want || !strings.Contains(got, "for 10s at most") {
		t.Errorf("note %q, want %q", got, want)
	}
	e.set(run.PhaseCleanup)
	if got := s.stopNote(e); !strings.HasPrefix(got, "no load was sent;") || !strings.Contains(got, fmt.Sprintf("for %v at most", run.TeardownTimeout)) {
		t.Errorf("note during a teardown with no load: %q", got)
	}
}
