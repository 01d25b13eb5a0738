// Package session owns the life of one test, whatever runs it: a plan
// loaded into a valid plan (Load), a result file set aside before any load
// (Open), one Executor that runs it (in this process, as local worker
// processes, on a Kubernetes cluster, or level by level), checkpoints,
// the Ctrl-C policy, streaming to sinks, the one verdict (gate.Judge),
// the final write and the exit code. Commands keep only their flags and
// their printing.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/output"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// Executor runs a test. The session owns everything around the run;
// an executor owns only how the load is made and what its result is.
type Executor interface {
	// Execute runs the test until it ends or ctx is cancelled (the first
	// Ctrl-C), when it stops gracefully and returns a result marked
	// partial. A result with an error is what was measured before the run
	// could not go on; an error alone means nothing was.
	Execute(ctx context.Context, c Control) (*result.Result, error)
	// Judge sets the result's verdict parts (thresholds, indicators) and
	// says what the verdict is drawn from. The session calls it once per
	// test, on the result it writes, and draws the verdict with gate.Judge;
	// a result marked partial is incomplete whatever Judge says.
	Judge(res *result.Result) gate.Outcome
}

// Snapshotter is an executor that can tell how its run stands while it
// goes: the session streams snapshots to sinks and writes one on the
// second Ctrl-C. Snapshot is nil until there is something to show.
type Snapshotter interface {
	Snapshot(reason string) *result.Result
}

// Forwarder is an executor whose processes hear Ctrl-C themselves (local
// workers): while it says so through Control.Forward, the session passes
// every signal on through Control.Signals instead of applying its own
// policy, and the workers' partial results make the partial whole. Around
// that (the coordinator's own setup and teardown) the session's policy
// applies: a signal passed on counts as the first Ctrl-C.
type Forwarder interface {
	ForwardsSignals() bool
}

// Control is what the session gives an executor.
type Control struct {
	// Checkpoint replaces the saved partial result atomically; a failed
	// checkpoint leaves the one before it and warns once.
	Checkpoint func(*result.Result)
	// Signals carries the interrupts the session receives while Forward
	// is on, for a Forwarder; nil otherwise.
	Signals <-chan os.Signal
	// Forward turns the passing on of signals on or off (off at the
	// start): on while the executor's processes run and can hear them,
	// off while the executor does work of its own that Ctrl-C must reach
	// (ctx, Snapshot). A no-op for an executor that is no Forwarder.
	Forward func(on bool)
}

// DefaultStopNote is what the first Ctrl-C prints.
const DefaultStopNote = "stopping: no new work starts; requests in flight get the grace period (Ctrl-C again to quit now)"

// QuitReason marks the partial result the second Ctrl-C writes.
const QuitReason = "interrupted twice (Ctrl-C): requests in flight were not waited for and are not counted"

// quitReason is QuitReason naming the signal that came second.
func quitReason(sig os.Signal) string {
	if name := run.SignalName(sig); name != "Ctrl-C" {
		return strings.Replace(QuitReason, "(Ctrl-C)", "(the second was "+name+")", 1)
	}
	return QuitReason
}

// Options shape a session.
type Options struct {
	// Out is the result file; empty for a test whose result is only
	// printed (stampede url without -o): nothing is set aside, checkpointed
	// or written.
	Out string
	// Need is the disk set aside for the final write (result.Open); at
	// least 1 MiB is set aside whatever it says.
	Need int64
	// Stderr hears warnings and the Ctrl-C notes (default: nowhere).
	Stderr io.Writer
	// Note shows the first Ctrl-C's StopNote (default: a line on Stderr),
	// so a live display can end its line first.
	Note     func(string)
	StopNote string
	// Sinks hear the run while it goes: the cumulative partial result once
	// every SampleEvery (default 1s, the series interval) from a goroutine
	// of the session's, when the executor is a Snapshotter, and the final
	// result once at the end through Close (nil when nothing was
	// measured). One snapshot goes to every sink: sinks must not modify
	// it. A sink's Close error is a warning on Stderr.
	Sinks       []output.Sink
	SampleEvery time.Duration
	// TestID is the run's testid label on the streamed series, recorded
	// in the result; empty when nothing streams.
	TestID string
	// OnQuit runs on the second Ctrl-C before the partial result is
	// written (to close logs the run keeps open).
	OnQuit func()
	// Signals, for tests, replaces Notify's signals.
	Signals <-chan os.Signal
	// Notify delivers Ctrl-C and SIGTERM while Run runs (Process.Notify);
	// without it or Signals, Run hears none.
	Notify func(c chan<- os.Signal) (stop func())
	// Exit ends the process on the second Ctrl-C (Process.Exit). If it
	// returns, or is nil (tests), Run returns an Outcome with Quit set.
	Exit func(code int)
}

// Session is one test's result file and lifecycle.
type Session struct {
	o    Options
	out  *result.Output
	warn sync.Once

	mu    sync.Mutex
	final bool // the result was judged and written: nothing else may be
	// stopping: a first Ctrl-C was heard (or passed on to the workers).
	stopping atomic.Bool
}

// Open sets aside the result file's open files and disk space before any
// load (result.Open): a run that takes every file descriptor or fills the
// disk still saves what it measured. A path that cannot be written is a
// usage error (exit 2); a disk with too little free space refuses the run
// (exit 3) before anything is sent.
func Open(o Options) (*Session, error) {
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.StopNote == "" {
		o.StopNote = DefaultStopNote
	}
	if o.Note == nil {
		w := o.Stderr
		o.Note = func(s string) { fmt.Fprintln(w, s) }
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = time.Second
	}
	if o.Exit == nil {
		o.Exit = func(int) {}
	}
	if o.Out == "" {
		return &Session{o: o}, nil
	}
	if err := checkResultPath(o.Out); err != nil {
		return nil, Fail(ExitUsage, err)
	}
	out, err := result.Open(o.Out, max(o.Need, minNeed))
	var se *result.SpaceError
	switch {
	case errors.As(err, &se):
		return nil, Fail(ExitRun, fmt.Errorf("%v\nNothing was sent.", err))
	case err != nil && result.IsStream(o.Out):
		return nil, Fail(ExitUsage, err)
	case err != nil:
		return nil, Fail(ExitUsage, fmt.Errorf("cannot write the result next to %s: %v", o.Out, err))
	}
	out.Warn = func(msg string) { fmt.Fprintf(o.Stderr, "\nstampede: warning: %s\n", msg) }
	return &Session{o: o, out: out}, nil
}

const minNeed = 1 << 20

// Path is where the result goes; empty without a result file.
func (s *Session) Path() string {
	if s.out == nil {
		return ""
	}
	return s.out.Path()
}

// Close releases what Open set aside; the result stays.
func (s *Session) Close() error {
	if s.out == nil {
		return nil
	}
	return s.out.Close()
}

// writeFinal writes the judged result, where there is a file to write.
func (s *Session) writeFinal(res *result.Result) error {
	if s.out == nil {
		return nil
	}
	if s.o.TestID != "" {
		res.Run.TestID = s.o.TestID
	}
	return s.out.Final(res)
}

// Outcome is a finished test.
type Outcome struct {
	// Result is what was written (judged); nil when nothing was measured.
	Result *result.Result
	// Verdict is gate.Judge's, drawn once.
	Verdict gate.Verdict
	// RunErr says why the run could not complete.
	RunErr error
	// SaveErr says why the result could not be saved, and where the last
	// good checkpoint is.
	SaveErr error
	// Quit is set when the second Ctrl-C ended the test: the partial
	// result was written and the process exited (or, in tests, would
	// have).
	Quit bool
}

// Err is the test's exit: a lost result or a run that could not complete
// is exit 3, else the verdict's code; nil for a pass.
func (o *Outcome) Err() error {
	switch {
	case o.Quit && (o.Result == nil || o.Result.Run.Partial):
		return Fail(ExitRun, nil)
	case o.Result == nil && o.RunErr != nil:
		return RunFailure(o.RunErr)
	case o.SaveErr != nil:
		return Fail(ExitRun, o.SaveErr)
	case o.RunErr != nil:
		return RunFailure(o.RunErr)
	case o.Verdict == gate.Incomplete && o.Result != nil && o.Result.Run.PartialReason != "":
		return Fail(ExitRun, fmt.Errorf("the result is partial: %s", o.Result.Run.PartialReason))
	}
	return VerdictErr(o.Verdict)
}

// Run runs the test with e and judges, writes and reports its result.
// The first Ctrl-C cancels the run's context (a graceful stop, partial
// result); the second writes the partial result at once and exits.
func (s *Session) Run(e Executor) *Outcome {
	ctx, cancelCause := context.WithCancelCause(context.Background())
	defer cancelCause(nil)
	// The signal is the cause, so what the run writes names it (run.Interrupt).
	cancel := func(sig os.Signal) { cancelCause(run.Interrupt{Signal: sig}) }
	sigs := s.o.Signals
	if sigs == nil {
		ch, stop := Process{Notify: s.o.Notify}.signals()
		defer stop()
		sigs = ch
	}
	c := Control{Checkpoint: s.checkpoint, Forward: func(bool) {}}
	quit := make(chan *Outcome, 1)
	watchDone := make(chan struct{})
	defer close(watchDone)
	pumpDone := s.pump(e)
	var fw *forwarding
	if f, ok := e.(Forwarder); ok && f.ForwardsSignals() {
		fw = &forwarding{to: make(chan os.Signal, 2)}
		c.Signals, c.Forward = fw.to, fw.on.Store
	}
	if w, ok := e.(phaseWatcher); ok {
		// A teardown that begins after a Ctrl-C stopped the setup or the
		// load says so: it goes on, and a second Ctrl-C cuts it off.
		w.watchPhase(func(p run.Phase) {
			if s.stopping.Load() && (p == run.PhaseTeardown || p == run.PhaseCleanup) {
				s.o.Note(teardownStartNote(p == run.PhaseCleanup))
			}
		})
	}
	go s.interrupts(sigs, fw, watchDone, cancel, e, quit, pumpDone)

	type ran struct {
		res *result.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := e.Execute(ctx, c)
		done <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-done:
	case oc := <-quit:
		pumpDone()
		return oc
	}
	pumpDone()
	if !s.claimFinal() {
		// The second Ctrl-C came as the run ended and wrote its partial.
		return <-quit
	}
	oc := &Outcome{Result: r.res, RunErr: r.err}
	if r.res == nil {
		s.closeSinks(nil, 0)
		return oc
	}
	if r.err != nil && !r.res.Run.Partial {
		// What ran before the failure is saved, but it is not the test
		// the plan asked for: the file must say so, not pass for whole.
		r.res.Run.Partial = true
		r.res.Run.PartialReason = "the run could not complete: " + r.err.Error()
	}
	oc.Verdict = s.judge(e, r.res, r.err != nil)
	if err := s.writeFinal(r.res); err != nil {
		oc.SaveErr = s.lost(err)
	}
	s.closeSinks(r.res, 0)
	return oc
}

// judge draws the verdict: once per test, on the result that is written.
func (s *Session) judge(e Executor, res *result.Result, failed bool) gate.Verdict {
	g := e.Judge(res)
	g.Incomplete = g.Incomplete || res.Run.Partial || failed
	return gate.Judge(g)
}

func (s *Session) claimFinal() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final {
		return false
	}
	s.final = true
	return true
}

// forwarding is where a Forwarder's signals go while it asks for them.
type forwarding struct {
	on atomic.Bool
	to chan os.Signal
}

// pass hands sig on when forwarding is on; false when it is off.
func (f *forwarding) pass(sig os.Signal) bool {
	if f == nil || !f.on.Load() {
		return false
	}
	select {
	case f.to <- sig:
	default: // two are waiting already: the workers will quit at once
	}
	return true
}

// interrupts applies the Ctrl-C policy until the test ends.
func (s *Session) interrupts(sigs <-chan os.Signal, fw *forwarding, done <-chan struct{}, cancel func(os.Signal), e Executor, quit chan<- *Outcome, stopPump func()) {
	stopping := false
	var sig os.Signal
	for {
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		if fw.pass(sig) {
			// The executor's processes stop on their own; ctx stays, since
			// cancelling it would kill them before they write.
			stopping = true
			s.stopping.Store(true)
			continue
		}
		if stopping {
			break
		}
		stopping = true
		// Before the note and the cancel: a teardown that the cancel
		// leads to says it starts (Run's phase watch).
		s.stopping.Store(true)
		s.o.Note(signalNote(sig, s.stopNote(e)))
		cancel(sig)
	}
	if !s.claimFinal() {
		return // the test has just ended and is writing its own result
	}
	oc := &Outcome{Quit: true, Verdict: gate.Incomplete}
	var snap *result.Result
	if sn, ok := e.(Snapshotter); ok {
		snap = sn.Snapshot(quitReason(sig))
	}
	if s.o.OnQuit != nil {
		s.o.OnQuit()
	}
	if snap != nil {
		oc.Result = snap
		// A snapshot taken once the load was over (only its teardown was
		// running) is the whole load: judged as complete, not as cut off.
		oc.Verdict = s.judge(e, snap, snap.Run.Partial)
		if err := s.writeFinal(snap); err != nil {
			oc.SaveErr = s.lost(err)
		}
	}
	// Sinks get a moment to flush what they hold, no more: the user asked
	// to quit now. The pump must be stopped first: a sink may not be
	// given a sample while or after it closes. A sink stuck in a sample
	// past the moment is left unclosed rather than closed under it.
	if stopWithin(stopPump, sinkLimit) {
		s.closeSinks(snap, sinkLimit)
	} else {
		fmt.Fprintf(s.o.Stderr, "\nstampede: warning: an output was still taking a sample after %v; outputs were not closed\n", sinkLimit)
	}
	fmt.Fprintf(s.o.Stderr, "\nstampede: %s\n", s.quitMessage(oc, snap, e))
	s.Close()
	code := ExitRun
	if err := oc.Err(); err == nil {
		code = ExitOK
	} else if ee := (*ExitError)(nil); errors.As(err, &ee) {
		code = ee.Code
	}
	s.o.Exit(code)
	quit <- oc
}

// quitMessage is what the second Ctrl-C says it saved, or why nothing.
func (s *Session) quitMessage(oc *Outcome, snap *result.Result, e Executor) string {
	switch {
	case oc.SaveErr != nil:
		return oc.SaveErr.Error()
	case snap != nil && !snap.Run.Partial && s.out == nil:
		return "quit at once during the teardown (teardown cut off); the load was complete, but no result file was asked for (-o)"
	case snap != nil && !snap.Run.Partial:
		return fmt.Sprintf("quit at once during the teardown; the whole load's result, teardown cut off, in %s", s.Path())
	case snap != nil && s.out == nil:
		return "quit at once; no result file was asked for (-o), so the partial result is not saved"
	case snap != nil:
		return fmt.Sprintf("quit at once; partial result in %s", s.Path())
	case tearingDown(e):
		// No load was measured, but the setup may have made something
		// that the cut-off teardown did not remove.
		return "quit at once; the teardown was cut off, so what the setup made may be left on the target; nothing was measured, no result written"
	default:
		return "quit at once; nothing was measured yet, no result written"
	}
}

// sinkLimit is how long the second Ctrl-C waits for the outputs.
const sinkLimit = 2 * time.Second

// stopWithin runs stop and waits at most limit for it; false when it
// has not returned by then (it goes on in the background).
func stopWithin(stop func(), limit time.Duration) bool {
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// checkpoint saves a partial result; only the final write decides whether
// the result was saved, so a failure warns once and the run goes on.
func (s *Session) checkpoint(res *result.Result) {
	// Held over the write: once the final result is claimed (the run's
	// end or the second Ctrl-C), no checkpoint may land over it.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final || s.out == nil {
		return
	}
	if err := s.out.Checkpoint(res); err != nil {
		s.warn.Do(func() {
			fmt.Fprintf(s.o.Stderr, "\nstampede: warning: a checkpoint could not be written (%v); the last good one stays in place and the run goes on\n", err)
		})
	}
}

// lost is the error of a final write that failed: it says where the last
// good checkpoint is, if one was written.
func (s *Session) lost(err error) error {
	o := s.out
	at, partial, ok := o.Saved()
	if !ok {
		return fmt.Errorf("the result could not be saved to %s: %v\nNo checkpoint was written either: nothing measured was saved", o.Path(), err)
	}
	what := "result"
	if partial {
		what = "partial result"
	}
	return fmt.Errorf("the result could not be saved to %s: %v\nThe last good checkpoint, a %s written at %s, is still in %s",
		o.Path(), err, what, at.Format("15:04:05"), o.Path())
}

// signalNote is the stop note as the user hears it: a signal other than
// Ctrl-C is named, so a SIGTERM from a supervisor is not taken for a key.
func signalNote(sig os.Signal, note string) string {
	if name := run.SignalName(sig); name != "Ctrl-C" {
		return name + " received; " + note
	}
	return note
}
