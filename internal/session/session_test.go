package session

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// safety bounds every wait of these tests; none of them asserts a
// duration.
const safety = 30 * time.Second

// fake is an executor whose run the test drives: it reports when it has
// started, then does what the test scripted.
type fake struct {
	started chan struct{}
	// body runs as the executor's run.
	body func(ctx context.Context, c Control) (*result.Result, error)
	// snap, when set, is what Snapshot returns.
	snap func(reason string) *result.Result

	judged atomic.Int32
	// thresholds are what Judge puts in the result.
	thresholds []result.Threshold
}

func (f *fake) Execute(ctx context.Context, c Control) (*result.Result, error) {
	close(f.started)
	return f.body(ctx, c)
}

func (f *fake) Judge(res *result.Result) gate.Outcome {
	f.judged.Add(1)
	res.Thresholds = append([]result.Threshold{}, f.thresholds...)
	return gate.Outcome{Thresholds: res.Thresholds}
}

type snapFake struct{ *fake }

func (f snapFake) Snapshot(reason string) *result.Result { return f.snap(reason) }

type fwdFake struct{ *fake }

func (f fwdFake) ForwardsSignals() bool { return true }

// res is a small consistent result of n successful requests.
func res(n int64, partial bool, reason string) *result.Result {
	h := result.NewHistogram()
	for i := int64(0); i < n; i++ {
		h.RecordValue(1000 + i)
	}
	lat := result.LatencyOf(h)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &result.Result{
		Schema: result.Schema,
		Tool:   result.Tool{Name: "stampede", Version: "test"},
		Plan:   result.PlanInfo{Name: "t", SHA256: "abcd", Source: "x"},
		Run: result.RunInfo{Model: "closed", LatencyFrom: "send", Segment: result.Segment{Count: 1},
			Started: t0, Ended: t0.Add(2 * time.Second), DurationS: 2, Partial: partial, PartialReason: reason},
		Totals: result.Totals{Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat},
		Steps: []result.Step{{Scenario: "s", Name: "GET /", Requests: n, Successful: n, ByClass: map[string]int64{},
			LatencyOK: lat, LatencyAll: lat}},
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
}

type harness struct {
	s      *Session
	out    string
	sigs   chan os.Signal
	stderr *syncBuf
	notes  atomic.Int32
	exits  chan int
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func open(t *testing.T, mod func(*Options)) *harness {
	t.Helper()
	h := &harness{out: filepath.Join(t.TempDir(), "r.json"), sigs: make(chan os.Signal, 2), stderr: &syncBuf{}, exits: make(chan int, 1)}
	o := Options{Out: h.out, Stderr: h.stderr, Signals: h.sigs,
		Note: func(string) { h.notes.Add(1) }, Exit: func(code int) { h.exits <- code }}
	if mod != nil {
		mod(&o)
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h.s = s
	return h
}

func newFake() *fake { return &fake{started: make(chan struct{})} }

func runAsync(h *harness, e Executor) <-chan *Outcome {
	ch := make(chan *Outcome, 1)
	go func() { ch <- h.s.Run(e) }()
	return ch
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatalf("no %s within %v", what, safety)
		panic("unreachable")
	}
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v carries no exit code", err)
	}
	return ee.Code
}

func read(t *testing.T, path string) *result.Result {
	t.Helper()
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCompleteRunPassesAndIsWrittenOnce(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	final := res(10, false, "")
	f.body = func(context.Context, Control) (*result.Result, error) { return final, nil }
	oc := h.s.Run(f)
	if oc.Verdict != gate.Pass || oc.Err() != nil || oc.SaveErr != nil || oc.Result != final {
		t.Fatalf("outcome %+v, err %v: want a saved pass", oc, oc.Err())
	}
	if n := f.judged.Load(); n != 1 {
		t.Errorf("judged %d times, want once", n)
	}
	if r := read(t, h.out); r.Totals.Requests != 10 || r.Run.Partial {
		t.Errorf("saved %d requests, partial %v", r.Totals.Requests, r.Run.Partial)
	}
}

func TestFailedThresholdIsExitOne(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	f.thresholds = []result.Threshold{{Expr: "p95 < 1ms", Pass: false}}
	f.body = func(context.Context, Control) (*result.Result, error) { return res(3, false, ""), nil }
	oc := h.s.Run(f)
	if oc.Verdict != gate.Fail || exitCode(t, oc.Err()) != ExitThreshold {
		t.Fatalf("verdict %v, err %v: want fail, exit 1", oc.Verdict, oc.Err())
	}
	if r := read(t, h.out); len(r.Thresholds) != 1 || r.Thresholds[0].Pass {
		t.Errorf("saved thresholds %+v: want the failed one", r.Thresholds)
	}
}

// The first Ctrl-C stops the run gracefully: the executor's context ends,
// it returns a partial result, which is judged once and saved; exit 3.
func TestCtrlCOnceSavesPartial(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	f.body = func(ctx context.Context, _ Control) (*result.Result, error) {
		<-ctx.Done()
		return res(7, true, "interrupted (Ctrl-C) at 1s of 60s"), nil
	}
	ch := runAsync(h, f)
	wait(t, f.started, "start")
	h.sigs <- os.Interrupt
	oc := wait(t, ch, "outcome")
	if oc.Verdict != gate.Incomplete || exitCode(t, oc.Err()) != ExitRun {
		t.Fatalf("verdict %v, err %v: want incomplete, exit 3", oc.Verdict, oc.Err())
	}
	if !strings.Contains(oc.Err().Error(), "Ctrl-C") {
		t.Errorf("error %q does not say why the result is partial", oc.Err())
	}
	if n := h.notes.Load(); n != 1 {
		t.Errorf("%d stop notes, want 1", n)
	}
	if n := f.judged.Load(); n != 1 {
		t.Errorf("judged %d times, want once", n)
	}
	if r := read(t, h.out); !r.Run.Partial || r.Totals.Requests != 7 {
		t.Errorf("saved partial %v with %d requests, want the partial 7", r.Run.Partial, r.Totals.Requests)
	}
	select {
	case c := <-h.exits:
		t.Errorf("exited with %d after one Ctrl-C", c)
	default:
	}
}

// The second Ctrl-C writes the snapshot at once and exits 3, without
// waiting for the run; the run's own end later writes nothing more.
func TestCtrlCTwiceWritesSnapshotAndExits(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	release := make(chan struct{})
	f.body = func(ctx context.Context, _ Control) (*result.Result, error) {
		<-release // a run whose requests in flight do not end
		return res(99, true, "interrupted (Ctrl-C)"), nil
	}
	f.snap = func(reason string) *result.Result { return res(5, true, reason) }
	ch := runAsync(h, snapFake{f})
	wait(t, f.started, "start")
	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	if code := wait(t, h.exits, "exit"); code != ExitRun {
		t.Errorf("exit %d, want 3", code)
	}
	oc := wait(t, ch, "outcome")
	close(release)
	if !oc.Quit || exitCode(t, oc.Err()) != ExitRun {
		t.Errorf("outcome quit %v, err %v: want quit, exit 3", oc.Quit, oc.Err())
	}
	r := read(t, h.out)
	if !r.Run.Partial || r.Run.PartialReason != QuitReason || r.Totals.Requests != 5 {
		t.Errorf("saved partial %v %q with %d requests: want the snapshot's 5, marked %q", r.Run.Partial, r.Run.PartialReason, r.Totals.Requests, QuitReason)
	}
	if n := f.judged.Load(); n != 1 {
		t.Errorf("judged %d times, want once", n)
	}
	if !strings.Contains(h.stderr.String(), "partial result in "+h.out) {
		t.Errorf("stderr does not say where the partial result is:\n%s", h.stderr)
	}
}

// A second Ctrl-C before anything was measured exits without a file and
// says so.
func TestCtrlCTwiceBeforeLoadWritesNothing(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	release := make(chan struct{})
	defer close(release)
	f.body = func(context.Context, Control) (*result.Result, error) {
		<-release
		return nil, errors.New("never")
	}
	f.snap = func(string) *result.Result { return nil }
	ch := runAsync(h, snapFake{f})
	wait(t, f.started, "start")
	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	wait(t, h.exits, "exit")
	oc := wait(t, ch, "outcome")
	if !oc.Quit || oc.Result != nil {
		t.Errorf("outcome %+v: want a quit with no result", oc)
	}
	if _, err := os.Stat(h.out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a result file exists after a quit with nothing measured: %v", err)
	}
	if !strings.Contains(h.stderr.String(), "no result written") {
		t.Errorf("stderr does not say nothing was written:\n%s", h.stderr)
	}
}

// Checkpoints replace each other in place: a reader polling the file
// while they are written sees only whole results, each checkpoint's in
// turn, and the final result replaces the last.
func TestCheckpointsReplaceAtomically(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	const n = 60
	var torn atomic.Int32
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.Stat(h.out); err != nil {
				continue
			}
			if _, err := result.Read(h.out); err != nil {
				torn.Add(1)
			}
		}
	}()
	f.body = func(_ context.Context, c Control) (*result.Result, error) {
		for i := int64(1); i <= n; i++ {
			c.Checkpoint(res(i, true, "run still in progress"))
			if r := read(t, h.out); r.Totals.Requests != i || !r.Run.Partial {
				t.Errorf("after checkpoint %d the file holds %d requests (partial %v)", i, r.Totals.Requests, r.Run.Partial)
			}
		}
		return res(n+1, false, ""), nil
	}
	oc := h.s.Run(f)
	close(stop)
	<-readerDone
	if oc.Err() != nil {
		t.Fatal(oc.Err())
	}
	if k := torn.Load(); k > 0 {
		t.Errorf("a reader saw %d unreadable results while checkpoints were written", k)
	}
	if r := read(t, h.out); r.Totals.Requests != n+1 || r.Run.Partial {
		t.Errorf("final file: %d requests, partial %v; want the final result", r.Totals.Requests, r.Run.Partial)
	}
}

// An executor that fails after measuring something: what it measured is
// saved, marked partial with the failure, and the exit is 3 with the
// error, after the caller printed it.
func TestExecutorErrorSavesPartial(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	f.body = func(context.Context, Control) (*result.Result, error) {
		return res(4, false, ""), errors.New("level 3: the target went away")
	}
	oc := h.s.Run(f)
	err := oc.Err()
	if exitCode(t, err) != ExitRun || !strings.Contains(err.Error(), "target went away") || oc.Verdict != gate.Incomplete {
		t.Fatalf("verdict %v, err %v: want incomplete, exit 3 naming the failure", oc.Verdict, err)
	}
	r := read(t, h.out)
	if !r.Run.Partial || !strings.Contains(r.Run.PartialReason, "target went away") || r.Totals.Requests != 4 {
		t.Errorf("saved partial %v %q, %d requests: want the 4 measured, partial, naming the failure", r.Run.Partial, r.Run.PartialReason, r.Totals.Requests)
	}
}

// An executor that fails before measuring anything writes nothing; an
// unreachable target gets its hint.
func TestExecutorErrorWithoutResult(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	f.body = func(context.Context, Control) (*result.Result, error) {
		return nil, run.ErrUnreachable
	}
	oc := h.s.Run(f)
	err := oc.Err()
	if exitCode(t, err) != ExitRun || !strings.Contains(err.Error(), "Nothing was sent") {
		t.Fatalf("err %v: want exit 3 with the hint", err)
	}
	if n := f.judged.Load(); n != 0 {
		t.Errorf("judged %d times with nothing measured", n)
	}
	if _, err := os.Stat(h.out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("result file after a run that measured nothing: %v", err)
	}
}

// A final write that fails is exit 3 and says the last good checkpoint is
// still in place, which the file proves.
func TestFinalWriteFailureNamesCheckpoint(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	f.body = func(_ context.Context, c Control) (*result.Result, error) {
		c.Checkpoint(res(8, true, "run still in progress"))
		bad := res(9, false, "")
		bad.Run.DurationS = math.NaN() // JSON cannot hold it: the write fails
		return bad, nil
	}
	oc := h.s.Run(f)
	err := oc.Err()
	if exitCode(t, err) != ExitRun || oc.SaveErr == nil {
		t.Fatalf("err %v, save error %v: want exit 3 for a lost result", err, oc.SaveErr)
	}
	if !strings.Contains(err.Error(), "could not be saved") || !strings.Contains(err.Error(), "last good checkpoint") {
		t.Errorf("error %q does not say the result was lost and the checkpoint kept", err)
	}
	if r := read(t, h.out); r.Totals.Requests != 8 || !r.Run.Partial {
		t.Errorf("file holds %d requests (partial %v), want the checkpoint's 8", r.Totals.Requests, r.Run.Partial)
	}
}

// A result next to a path that is not a directory is refused before any
// load, as a usage error that names the path.
func TestUnwritableOutIsUsageError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	out := filepath.Join(file, "r.json")
	_, err := Open(Options{Out: out, Stderr: &bytes.Buffer{}})
	if exitCode(t, err) != ExitUsage || !strings.Contains(err.Error(), out) {
		t.Fatalf("err %v: want exit 2 naming %s", err, out)
	}
}

// recSink records what a sink hears.
type recSink struct {
	mu      sync.Mutex
	samples int
	closed  []*result.Result
	err     error
	enough  chan struct{}
	once    sync.Once
}

func (s *recSink) Name() string { return "rec" }

func (s *recSink) Sample(p *result.Result) {
	s.mu.Lock()
	s.samples++
	n := s.samples
	s.mu.Unlock()
	if n >= 3 {
		s.once.Do(func() { close(s.enough) })
	}
}

func (s *recSink) Close(final *result.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = append(s.closed, final)
	return s.err
}

// Sinks hear snapshots while the run goes and the judged final result
// once; a sink's error is a warning, not a failed run.
func TestSinksHearSamplesAndFinalOnce(t *testing.T) {
	a := &recSink{enough: make(chan struct{})}
	b := &recSink{enough: make(chan struct{}), err: errors.New("remote write refused")}
	h := open(t, func(o *Options) {
		o.Sinks = append(o.Sinks, a, b)
		o.SampleEvery = time.Millisecond
	})
	f := newFake()
	final := res(12, false, "")
	f.body = func(context.Context, Control) (*result.Result, error) {
		wait(t, a.enough, "three samples")
		return final, nil
	}
	f.snap = func(reason string) *result.Result { return res(1, true, reason) }
	oc := h.s.Run(snapFake{f})
	if oc.Err() != nil {
		t.Fatalf("a sink's error failed the run: %v", oc.Err())
	}
	for _, s := range []*recSink{a, b} {
		s.mu.Lock()
		if len(s.closed) != 1 || s.closed[0] != final {
			t.Errorf("sink closed %d times (with the final result: %v), want once", len(s.closed), len(s.closed) == 1 && s.closed[0] == final)
		}
		s.mu.Unlock()
	}
	if got := h.stderr.String(); !strings.Contains(got, "warning: output rec: remote write refused") {
		t.Errorf("stderr does not warn of the sink's error:\n%s", got)
	}
	if len(final.Thresholds) != 0 || f.judged.Load() != 1 {
		t.Errorf("judged %d times, want once", f.judged.Load())
	}
}

// An executor whose processes hear Ctrl-C themselves gets every signal;
// the session neither cancels it nor exits.
func TestForwarderGetsSignals(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	forwarding := make(chan struct{})
	f.body = func(ctx context.Context, c Control) (*result.Result, error) {
		c.Forward(true)
		close(forwarding)
		for i := 0; i < 2; i++ {
			wait(t, c.Signals, "forwarded signal")
		}
		if ctx.Err() != nil {
			t.Error("the session cancelled a forwarding executor")
		}
		return res(2, true, "interrupted (Ctrl-C) (all 2 segments)"), nil
	}
	ch := runAsync(h, fwdFake{f})
	wait(t, forwarding, "forwarding")
	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	oc := wait(t, ch, "outcome")
	if exitCode(t, oc.Err()) != ExitRun || oc.Quit {
		t.Errorf("err %v, quit %v: want exit 3 from the merged partial, not a quit", oc.Err(), oc.Quit)
	}
	if h.notes.Load() != 0 {
		t.Error("the session printed its stop note for a forwarding executor")
	}
	select {
	case c := <-h.exits:
		t.Errorf("exited with %d", c)
	default:
	}
}
