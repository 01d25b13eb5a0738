package vu

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// The runs of one carry (the levels of a sweep) never send an id an earlier
// run sent: {{ iter }} goes on after the earlier runs' highest iteration,
// and {{ uuid }} and rand_int draw from generators seeded by the carried
// {{ vu }}, not by the run's own user number, which starts at 1 again.
func TestCarryContinuesIterAndRandomIDs(t *testing.T) {
	type seen struct{ iters, uuids, rands map[string]int }
	var mu sync.Mutex
	var cur *seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		cur.iters[q.Get("iter")]++
		cur.uuids[q.Get("uuid")]++
		cur.rands[q.Get("rand")]++
		mu.Unlock()
	}))
	defer srv.Close()
	p, err := plan.Parse("carry.yaml", []byte(`target: `+srv.URL+`
scenarios:
  s:
    steps:
      - get: "/?iter={{ iter }}&uuid={{ uuid }}&rand={{ rand_int(1, 1000000000000) }}"
load: {stages: [{duration: 1s, users: 3}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	const users, iterations = 3, 4
	var carry Carry
	var levels []*seen
	for level := 0; level < 2; level++ {
		s := &seen{map[string]int{}, map[string]int{}, map[string]int{}}
		mu.Lock()
		cur = s
		mu.Unlock()
		levels = append(levels, s)
		prog, err := Compile(p, srv.URL, "stampede/test", nil)
		if err != nil {
			t.Fatal(err)
		}
		carry.Adopt(prog)
		rec := metrics.New(prog.Steps, 1)
		shared := httpc.NewShared(httpc.Options{})
		for id := int64(1); id <= users; id++ {
			u := prog.NewUser(id, shared.NewTransport(), rec)
			carry.Number(u)
			for range iterations {
				if err := u.Iterate(prog.ScenarioFor(0), time.Time{}, Stop{}); err != nil {
					t.Fatal(err)
				}
			}
			u.Close()
		}
	}
	first, second := levels[0], levels[1]
	if len(first.uuids) != users*iterations || len(first.iters) != iterations {
		t.Fatalf("first level: %d uuids and iters %v; want %d uuids and iters 0..%d", len(first.uuids), first.iters, users*iterations, iterations-1)
	}
	for it := range second.iters {
		n, err := strconv.Atoi(it)
		if err != nil || n < iterations || n >= 2*iterations {
			t.Errorf("second level sent iter %q; want it after the first level's 0..%d, from %d", it, iterations-1, iterations)
		}
	}
	for _, c := range []struct {
		name          string
		first, second map[string]int
	}{{"iter", first.iters, second.iters}, {"uuid", first.uuids, second.uuids}, {"rand_int", first.rands, second.rands}} {
		for v := range c.second {
			if c.first[v] > 0 {
				t.Errorf("%s %s sent at both levels", c.name, v)
			}
		}
	}
}
