package result

// Timed is how many of the run's requests were sent and came to an end
// (answered, failed or timed out): each has a latency, in latency_all.
// Left out are the failures before any send (a dropped arrival, a failed
// control step or script, a request that could not be built) and the
// requests cut off in flight at the end (interrupted). Those count in
// requests and the error rate, so no failure goes uncounted, but a
// throughput that counted them would report load the server never
// handled: an open model that dropped five arrivals in six showed six
// times the rate the server saw.
func (t Totals) Timed() int64 { return t.LatencyAll.Count }

// Timed is Totals.Timed for one step.
func (s Step) Timed() int64 { return s.LatencyAll.Count }
