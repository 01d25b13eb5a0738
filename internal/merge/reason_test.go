package merge

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// Segments of one run see one Ctrl-C a moment apart on a busy machine; the
// merged reason must still say it once, not list each segment.
func TestSameReasonAcrossInterruptTimes(t *testing.T) {
	partial := func(reason string) *result.Result {
		r := &result.Result{}
		r.Run.Partial = true
		r.Run.PartialReason = reason
		return r
	}
	cases := []struct {
		reasons []string
		want    string
	}{
		{[]string{"interrupted (Ctrl-C) at 4s of 1m0s", "interrupted (Ctrl-C) at 4s of 1m0s"}, "interrupted (Ctrl-C) at 4s of 1m0s"},
		{[]string{"interrupted (Ctrl-C) at 4s of 1m0s", "interrupted (Ctrl-C) at 5s of 1m0s", "interrupted (Ctrl-C) at 4.5s of 1m0s"}, "interrupted (Ctrl-C) at 4s–5s of 1m0s"},
		{[]string{"interrupted (Ctrl-C) at 4s of 1m0s", "interrupted (Ctrl-C) at 4s of 2m0s"}, ""},
		{[]string{"interrupted (Ctrl-C) at 4s of 1m0s", "generator fault at 4s of 1m0s"}, ""},
		{[]string{"data exhausted", "data exhausted"}, "data exhausted"},
		{[]string{"data exhausted", "disk full"}, ""},
	}
	for _, c := range cases {
		var rs []*result.Result
		for _, r := range c.reasons {
			rs = append(rs, partial(r))
		}
		if got := sameReason(rs); got != c.want {
			t.Errorf("sameReason(%q) = %q, want %q", c.reasons, got, c.want)
		}
	}
	whole := partial("interrupted (Ctrl-C) at 4s of 1m0s")
	complete := &result.Result{}
	if got := sameReason([]*result.Result{whole, complete}); got != "" {
		t.Errorf("one complete input: got %q, want no shared reason", got)
	}
}
