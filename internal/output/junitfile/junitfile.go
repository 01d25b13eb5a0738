// Package junitfile writes a run's JUnit XML report when the run ends, so
// run, gates and sweep can leave one for CI beside the result file.
package junitfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
)

// Sink is the --junit output: it ignores the run's snapshots and writes
// the final result, thresholds judged, at Close.
type Sink struct {
	path string
	// stream: path is a device or pipe (result.IsStream), written in
	// place, never replaced or removed (as root, --junit /dev/null was).
	stream bool
}

// New checks that path can be written now, so a typo fails before the
// load rather than after it.
func New(path string) (*Sink, error) {
	if err := result.CheckDestination(path); err != nil {
		return nil, fmt.Errorf("--junit: %v", err)
	}
	if result.IsStream(path) {
		return &Sink{path: path, stream: true}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--junit: %v", err)
	}
	f.Close()
	return &Sink{path: path}, nil
}

// Name implements output.Sink.
func (s *Sink) Name() string { return "junit=" + s.path }

// Sample implements output.Sink.
func (s *Sink) Sample(*result.Result) {}

// Close implements output.Sink. Without a result (nothing was measured)
// the file is removed rather than left empty, which CI would read as a
// broken report.
func (s *Sink) Close(final *result.Result) error {
	if s.stream {
		if final == nil {
			return nil
		}
		var b bytes.Buffer
		if err := report.JUnit(&b, final); err != nil {
			return err
		}
		return result.WriteStream(s.path, b.Bytes())
	}
	if final == nil {
		os.Remove(s.path)
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".junit-*.xml")
	if err != nil {
		return err
	}
	if err := report.JUnit(tmp, final); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	_ = os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), s.path)
}
