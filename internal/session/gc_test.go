package session

import (
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

// The GOGC decision is the session's, through the process main gave it:
// many users lower it, a GOGC the user set wins, few users leave it.
func TestTuneGCThroughProcess(t *testing.T) {
	planOf := func(users string) *plan.Plan {
		p, err := plan.Parse("gc.yaml", []byte("target: http://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: "+users+"}]}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		users string
		gogc  bool
		want  int
	}{{"2000", false, 25}, {"2000", true, 0}, {"10", false, 0}} {
		set := 0
		pr := Process{SetGCPercent: func(p int) int { set = p; return 100 }, LookupEnv: func(name string) (string, bool) {
			return "200", c.gogc && name == "GOGC"
		}}
		pr.tuneGC(planOf(c.users))
		if set != c.want {
			t.Errorf("%s users, GOGC set %v: GC percent set to %d, want %d (0: left alone)", c.users, c.gogc, set, c.want)
		}
	}
}
