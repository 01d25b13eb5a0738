package merge

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// segmentWith is a segment whose "POST vote" step failed n times as
// client errors, with the given messages (nil: a result from before steps
// kept messages) and status counts.
func segmentWith(t *testing.T, n int, top int, msgs []result.StepError, other int64, statuses map[string]int64) *result.Result {
	var reqs []req
	for i := 0; i < n; i++ {
		reqs = append(reqs, req{step: 1, class: sample.ClientError, us: 1000})
	}
	reqs = append(reqs, req{step: 1, class: sample.OK, us: 500})
	return resultOf(t, reqs, func(r *result.Result) {
		r.ErrorsTop = top
		r.Steps[1].Errors = msgs
		if other > 0 {
			r.Steps[1].OtherErrors = map[string]int64{"client_error": other}
		}
		r.Steps[1].Statuses = statuses
	})
}

// A merge adds statuses and messages; its top is chosen from every
// segment's kept messages, and what it cuts, what the segments cut and
// the failures of a segment that kept no messages all count as other, so
// each class still adds up.
func TestMergeErrorsAddAndKeepTheTop(t *testing.T) {
	x := func(msg string, n int64) result.StepError {
		return result.StepError{Class: "client_error", Status: 409, Message: msg, Count: n}
	}
	a := segmentWith(t, 4, 2, []result.StepError{x("X", 2), x("Y", 1)}, 1, map[string]int64{"201": 1, "409": 4})
	b := segmentWith(t, 3, 2, []result.StepError{x("Z", 2), x("X", 1)}, 0, map[string]int64{"201": 1, "409": 3})
	old := segmentWith(t, 2, 0, nil, 0, nil)
	for i, r := range []*result.Result{a, b, old} {
		r.Run.Segment = result.Segment{Index: i, Count: 3}
	}
	m, err := Results([]*result.Result{a, b, old})
	if err != nil {
		t.Fatal(err)
	}
	st := m.Steps[1]
	if err := st.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	want := []result.StepError{x("X", 3), x("Z", 2)}
	if len(st.Errors) != 2 || st.Errors[0] != want[0] || st.Errors[1] != want[1] {
		t.Fatalf("errors = %+v, want %+v", st.Errors, want)
	}
	// Y (1), a's own other (1) and old's 2 unexplained failures.
	if st.OtherErrors["client_error"] != 4 {
		t.Fatalf("other = %v, want 4", st.OtherErrors)
	}
	if st.Statuses["409"] != 7 || st.Statuses["201"] != 2 {
		t.Fatalf("statuses = %v", st.Statuses)
	}
	if m.ErrorsTop != 2 {
		t.Fatalf("errors_top = %d", m.ErrorsTop)
	}
	// Older readers see one sample per step and class, as they wrote it.
	if len(m.Samples) != 1 || m.Samples[0].Message != "X" || m.Samples[0].Count != 9 {
		t.Fatalf("flat samples = %+v", m.Samples)
	}
}
