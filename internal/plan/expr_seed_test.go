package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/stampede-load/stampede/internal/plan/lang"
)

// uuid() and choice() draw from the evaluating user's generator, so a
// plan's seed reproduces them; they drew from the process's.
func TestExprDrawsFromUsersGenerator(t *testing.T) {
	sc := &scope{}
	draw := func(src string, seed uint64) string {
		e, msg, _ := compileExpr(src, sc, false)
		if msg != "" {
			t.Fatalf("%s: %s", src, msg)
		}
		env := &Env{Rand: rand.New(rand.NewPCG(seed, 1))}
		var out []byte
		for i := 0; i < 4; i++ {
			v, err := e.Eval(env)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			out = append(AppendValue(out, v), ' ')
		}
		return string(out)
	}
	for _, src := range []string{`uuid()`, `choice(["a", "b", "c", "d", "e", "f", "g", "h"])`} {
		a, b, c := draw(src, 1), draw(src, 1), draw(src, 2)
		if a != b {
			t.Errorf("%s with one seed: %q then %q", src, a, b)
		}
		if a == c {
			t.Errorf("%s with seeds 1 and 2: %q both times", src, a)
		}
	}
	// The first uuid() is the generator's first two draws, as {{ uuid }}.
	e, _, _ := compileExpr(`uuid()`, sc, false)
	v, _ := e.Eval(&Env{Rand: rand.New(rand.NewPCG(3, 1))})
	r := rand.New(rand.NewPCG(3, 1))
	if want := string(lang.AppendUUID(nil, r.Uint64(), r.Uint64())); v != want {
		t.Errorf("uuid() = %v, want %s", v, want)
	}
	// The hidden argument leaves the arity checks as they were.
	for _, src := range []string{`uuid(1)`, `choice()`, `choice([1], [2])`} {
		if _, msg, _ := compileExpr(src, sc, false); msg == "" {
			t.Errorf("%s compiled", src)
		}
	}
}
