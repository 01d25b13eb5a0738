package session

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/run"
)

// live shows progress on stderr: one rewritten line on a terminal, a plain
// line every few seconds otherwise, so piped logs stay readable.
type live struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	quiet bool
	last  time.Time
	dirty bool
}

func newLive(w io.Writer, quiet bool) *live {
	l := &live{w: w, quiet: quiet}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		l.tty = true
	}
	return l
}

func (l *live) update(p run.Progress) {
	if l.quiet {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.tty && time.Since(l.last) < 5*time.Second && p.Elapsed < p.Total {
		return
	}
	l.last = time.Now()
	line := progressLine(p)
	if l.tty {
		fmt.Fprintf(l.w, "\r\x1b[K%s", line)
		l.dirty = true
	} else {
		fmt.Fprintln(l.w, line)
	}
}

func progressLine(p run.Progress) string {
	load := fmt.Sprintf("%d users", p.Active)
	if p.Model == plan.Open {
		load = fmt.Sprintf("%d in flight", p.InFlight)
	}
	errPct := 0.0
	if p.Requests > 0 {
		errPct = 100 * float64(p.Failed) / float64(p.Requests)
	}
	line := fmt.Sprintf("%s / %s  %.0f req/s  p95 %s  errors %d (%.2f%%)  %s",
		fmtElapsed(p.Elapsed), fmtElapsed(p.Total), p.RPS, report.Duration(p.P95US), p.Failed, errPct, load)
	if p.Dropped > 0 {
		line += fmt.Sprintf("  dropped %d", p.Dropped)
	}
	return line
}

func (l *live) note(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirty {
		fmt.Fprintln(l.w)
		l.dirty = false
	}
	fmt.Fprintln(l.w, msg)
}

func (l *live) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirty {
		fmt.Fprintln(l.w)
		l.dirty = false
	}
	l.quiet = true
}

func fmtElapsed(d time.Duration) string {
	return d.Truncate(time.Second).String()
}

// levelsLive keeps one live progress display per level. Events come from
// the level's own goroutine while progress comes from the run's ticker, so
// the current display is shared under a lock.
type levelsLive struct {
	stderr   io.Writer
	quiet    bool
	announce func(levels.Event) string // the line a new phase starts with, unless quiet

	mu  sync.Mutex
	cur *live
}

func (l *levelsLive) progress(pr run.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.update(pr)
	}
}

func (l *levelsLive) event(e levels.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.done()
	}
	if !l.quiet {
		fmt.Fprintln(l.stderr, l.announce(e))
	}
	// A ramp is not measured, so it gets no live line.
	l.cur = newLive(l.stderr, l.quiet || e.Phase == "ramp")
}

func (l *levelsLive) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.done()
	}
}
