// Package output defines what a running test streams to while it goes (a
// live dashboard, Prometheus remote write, OTLP, CSV): a sink hears the
// run's partial result once an interval and its final result once. The
// test's lifecycle owns the pump; sinks own their wire formats.
package output

import "github.com/stampede-load/stampede/internal/result"

// Sink receives a run's results while it goes.
type Sink interface {
	// Name is the sink as the user named it (e.g. "prometheus-rw=http://…"),
	// for warnings.
	Name() string
	// Sample hears the run's cumulative partial result so far, once per
	// interval, on a goroutine apart from the load. It must return quickly:
	// a slow or absent receiver is the sink's to buffer (bounded) and count,
	// never the load's to wait for. The result is the sink's to keep.
	Sample(partial *result.Result)
	// Close hears the final result once, flushes, and releases what the
	// sink holds. Its error is a warning for the user, not a failed run.
	Close(final *result.Result) error
}
