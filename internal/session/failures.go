package session

import (
	"fmt"
	"io"
	"sync"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// DefaultErrorsTop is --error-messages' default.
const DefaultErrorsTop = result.DefaultErrorsTop

// Failures say how much of each failure a run keeps: the distinct
// messages per step (Errors table) and whole failing exchanges.
type Failures struct {
	Top  int // --error-messages
	Keep int // --keep-failures
}

// apply sets the run's error options; the returned function closes the
// failure samples' file and says where they are.
func (f Failures) apply(opts *run.Options, out string, stderr io.Writer) (func(), error) {
	if f.Top < 1 {
		return nil, Fail(ExitUsage, fmt.Errorf("--error-messages must be at least 1, got %d", f.Top))
	}
	if f.Keep < 0 {
		return nil, Fail(ExitUsage, fmt.Errorf("--keep-failures must not be negative, got %d", f.Keep))
	}
	opts.Errors.Top = f.Top
	if f.Keep == 0 {
		return func() {}, nil
	}
	if err := besideResult(out, "--keep-failures"); err != nil {
		return nil, err
	}
	path := metrics.FailuresPath(out)
	log, err := metrics.OpenFailureLog(path, f.Keep)
	if err != nil {
		return nil, Fail(ExitUsage, fmt.Errorf("--keep-failures: %v", err))
	}
	opts.Errors.Failures = log
	// Called at the end of the run, or from the second Ctrl-C's handler
	// while the run may still be ending: once is enough.
	var once sync.Once
	return func() {
		once.Do(func() {
			n := log.Written()
			if err := log.Close(); err != nil {
				fmt.Fprintf(stderr, "stampede: failure samples in %s are incomplete: %v\n", path, err)
				return
			}
			if n == 0 {
				// No file either: there was nothing to keep.
				return
			}
			fmt.Fprintf(stderr, "%d failure %s saved to %s\n", n, pluralWord(int(n), "sample"), path)
		})
	}, nil
}

func pluralWord(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}
