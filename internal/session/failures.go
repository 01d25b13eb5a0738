package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// errorFlags say how much of each failure a run keeps: the distinct
// messages per step (Errors table) and whole failing exchanges.
type errorFlags struct {
	top  int
	keep int
}

func (f *errorFlags) add(fs *pflag.FlagSet) {
	fs.IntVar(&f.top, "error-messages", result.DefaultErrorsTop, "distinct failure messages kept per step (the rest count as other messages)")
	fs.IntVar(&f.keep, "keep-failures", 0, "write up to N complete failing exchanges per step to RESULT.failures.jsonl (secrets redacted)")
}

// apply sets the run's error options; the returned function closes the
// failure samples' file and says where they are.
func (f *errorFlags) apply(opts *run.Options, out string, stderr io.Writer) (func(), error) {
	if f.top < 1 {
		return nil, fail(exitUsage, fmt.Errorf("--error-messages must be at least 1, got %d", f.top))
	}
	if f.keep < 0 {
		return nil, fail(exitUsage, fmt.Errorf("--keep-failures must not be negative, got %d", f.keep))
	}
	opts.Errors.Top = f.top
	if f.keep == 0 {
		return func() {}, nil
	}
	path := metrics.FailuresPath(out)
	log, err := metrics.OpenFailureLog(path, f.keep)
	if err != nil {
		return nil, fail(exitUsage, fmt.Errorf("--keep-failures: %v", err))
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
