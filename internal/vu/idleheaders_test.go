package vu

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
)

// TestIdleUserHoldsNoHeaderStorage: between iterations a user holds no
// storage for its last answer's headers (it kept about 575 bytes of them
// for reuse, on every idle user), and what needs the headers while the
// answer is judged still sees them: the failure message is built from the
// Content-Type, iteration after iteration.
func TestIdleUserHoldsNoHeaderStorage(t *testing.T) {
	base := cannedServer(t, conflictAnswer)
	u, sc, rec := recUserFor(t, votePlan, base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	for i := 0; i < 3; i++ {
		u.Iterate(sc, time.Time{}, stop)
		if c := cap(u.resp.Header); c != 0 {
			t.Fatalf("iteration %d: an idle user keeps room for %d header fields, want none", i, c)
		}
	}
	errs := rec.Snapshot().Steps[0].Errors
	if len(errs) != 1 || errs[0].Count != 3 || errs[0].Message != `409 Conflict: {"error":"voter has already voted"}` {
		t.Fatalf("errors = %+v", errs)
	}
}
