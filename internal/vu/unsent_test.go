package vu

import (
	"strings"
	"testing"
)

// A step that fails before anything is sent (a for_each over a non-list,
// an if whose expression fails, a script that calls fail(), a URL that
// renders without a host) is one failure of its step, with its class and
// message, but has no latency: before, each added a 0 µs sample to
// latency_all, pulling the percentiles down.
func TestUnsentFailuresHaveNoLatency(t *testing.T) {
	for _, tc := range []struct {
		name, steps, step, class, msg string
	}{
		{"for_each", `
      - for_each: token
        steps:
          - name: item
            get: /items/{{ item }}`, "item", "check", "for_each"},
		{"if", `
      - if: int(token) > 3
        steps:
          - name: guarded
            get: /guarded`, "guarded", "check", "if "},
		{"script", `
      - name: judge
        script: fail("token " + captures.token + " looks wrong")
      - name: after
        get: /after`, "after", "check", "judge: "},
		{"build", `
      - name: relative
        get: "http://{{ token }}:bad/x"`, "relative", "other", "no http(s) scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newAuthServer(t, 0)
			yaml := `
scenarios:
  s:
    steps:
      - name: login
        post: /login?user=x
        capture: {token: {json: token}}` + tc.steps + `
load: {stages: [{duration: 1s, users: 1}]}
`
			prog, us, rec := flowUsers(t, yaml, srv.url, 1)
			runIters(t, us[0], prog.ScenarioFor(0), 3)
			rec.Tick(1, 1)
			snap := rec.Snapshot()
			var found bool
			for _, s := range snap.Steps {
				if s.Name != tc.step {
					continue
				}
				found = true
				if s.Requests != 3 || s.Failed != 3 || s.ByClass[tc.class] != 3 {
					t.Errorf("%s: %d outcomes, %d failed, classes %v; want 3 failures of class %s", s.Name, s.Requests, s.Failed, s.ByClass, tc.class)
				}
				if s.LatencyAll.Count != 0 || s.LatencyOK.Count != 0 {
					t.Errorf("%s: latency_all has %d samples, latency_ok %d; want none: nothing was sent", s.Name, s.LatencyAll.Count, s.LatencyOK.Count)
				}
				if len(s.Errors) == 0 || !strings.Contains(s.Errors[0].Message, tc.msg) {
					t.Errorf("%s: errors %+v, want a message with %q", s.Name, s.Errors, tc.msg)
				}
			}
			if !found {
				t.Fatalf("no step %q in %+v", tc.step, snap.Steps)
			}
			// Only the three logins were sent; the failures still ended,
			// as outcomes of their interval.
			if n := snap.Totals.LatencyAll.Count; n != 3 {
				t.Errorf("totals.latency_all has %d samples, want the 3 logins'", n)
			}
			if c := snap.Series.Completed; len(c) != 1 || c[0] != 6 {
				t.Errorf("series.completed %v, want [6]: 3 logins and 3 failures", c)
			}
			if f := snap.Series.Failed[tc.class]; len(f) != 1 || f[0] != 3 {
				t.Errorf("series.failed.%s %v, want [3]", tc.class, f)
			}
		})
	}
}
