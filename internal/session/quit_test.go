package session

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// orderSink records whether it was ever given a sample while or after it
// closed: a sink such as the CSV writer has no lock of its own.
type orderSink struct {
	inSample atomic.Bool
	closed   atomic.Bool
	closes   atomic.Int32
	samples  atomic.Int32
	bad      atomic.Int32
	entered  chan struct{}
	once     sync.Once
	// closing is closed by Close, so a sample in progress when Close
	// comes sees it at once.
	closing   chan struct{}
	closeOnce sync.Once
}

func (s *orderSink) Name() string { return "order" }

func (s *orderSink) Sample(*result.Result) {
	if s.closed.Load() {
		s.bad.Add(1)
	}
	s.inSample.Store(true)
	s.samples.Add(1)
	s.once.Do(func() { close(s.entered) })
	// A slow sink: the sample takes a while, so a second Ctrl-C lands
	// while it is being taken.
	select {
	case <-s.closing:
	case <-time.After(100 * time.Millisecond):
	}
	if s.closed.Load() {
		s.bad.Add(1)
	}
	s.inSample.Store(false)
}

func (s *orderSink) Close(*result.Result) error {
	if s.inSample.Load() {
		s.bad.Add(1)
	}
	s.closed.Store(true)
	s.closes.Add(1)
	s.closeOnce.Do(func() { close(s.closing) })
	return nil
}

// The second Ctrl-C stops the stream of samples, and waits for the one
// being taken, before it closes the sinks: no sink hears a sample while
// or after it closes.
func TestSecondCtrlCClosesSinksAfterTheLastSample(t *testing.T) {
	k := &orderSink{entered: make(chan struct{}), closing: make(chan struct{})}
	h := open(t, func(o *Options) {
		o.Sinks = append(o.Sinks, k)
		o.SampleEvery = time.Millisecond
	})
	f := newFake()
	release := make(chan struct{})
	defer close(release)
	f.body = func(ctx context.Context, _ Control) (*result.Result, error) {
		<-release
		return nil, nil
	}
	f.snap = func(reason string) *result.Result { return res(3, true, reason) }
	ch := runAsync(h, snapFake{f})
	wait(t, k.entered, "a sample")
	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	wait(t, h.exits, "exit")
	wait(t, ch, "outcome")
	// Were the pump still going, its next tick would sample now.
	time.Sleep(20 * time.Millisecond)
	if n := k.bad.Load(); n != 0 {
		t.Errorf("%d samples overlapped or followed the sink's Close", n)
	}
	if n := k.closes.Load(); n != 1 {
		t.Errorf("sink closed %d times, want once", n)
	}
}

// A second Ctrl-C once the load is over (only the teardown runs) saves
// the whole load as complete: the exit is the verdict's, not 3.
func TestCtrlCTwiceDuringTeardownKeepsTheRunComplete(t *testing.T) {
	for _, c := range []struct {
		name string
		th   []result.Threshold
		want int
	}{
		{"pass", []result.Threshold{{Expr: "p95 < 1s", Pass: true}}, ExitOK},
		{"fail", []result.Threshold{{Expr: "p95 < 1ms", Pass: false}}, ExitThreshold},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := open(t, nil)
			f := newFake()
			f.thresholds = c.th
			release := make(chan struct{})
			defer close(release)
			f.body = func(ctx context.Context, _ Control) (*result.Result, error) {
				<-release // the teardown against a slow endpoint
				return res(40, false, ""), nil
			}
			f.snap = func(reason string) *result.Result {
				r := res(40, false, "")
				r.Workflow = &result.Workflow{Teardown: &result.Phase{Error: "cut off before it finished: " + reason}}
				return r
			}
			ch := runAsync(h, snapFake{f})
			wait(t, f.started, "start")
			h.sigs <- os.Interrupt
			h.sigs <- os.Interrupt
			if code := wait(t, h.exits, "exit"); code != c.want {
				t.Errorf("exit %d, want %d", code, c.want)
			}
			oc := wait(t, ch, "outcome")
			if got := exitCode(t, oc.Err()); !oc.Quit || got != c.want {
				t.Errorf("outcome quit %v, exit %d: want quit, exit %d", oc.Quit, got, c.want)
			}
			r := read(t, h.out)
			if r.Run.Partial || r.Totals.Requests != 40 || r.Workflow == nil || r.Workflow.Teardown == nil ||
				!strings.Contains(r.Workflow.Teardown.Error, "cut off") {
				t.Errorf("saved partial %v (%q), %d requests, workflow %+v: want the complete load, teardown cut off",
					r.Run.Partial, r.Run.PartialReason, r.Totals.Requests, r.Workflow)
			}
			if len(r.Thresholds) != len(c.th) {
				t.Errorf("saved %d thresholds, want the judged %d", len(r.Thresholds), len(c.th))
			}
			if !strings.Contains(h.stderr.String(), "teardown cut off") {
				t.Errorf("stderr does not say the teardown was cut off:\n%s", h.stderr)
			}
		})
	}
}
