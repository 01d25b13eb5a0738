package levels

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// With --workers each level runs in new processes, whose {{ vu }} ids
// restarted at 1 at every level, and each of which drew its own seed: the
// levels' users were not the distinct users one process numbers (its
// levels carry the ids on), and a plan's seed made later levels send the
// same {{ uuid }}s. The coordinator now hands each level the highest ids
// the levels before it reached, and one seed to every segment.
func TestWorkersLevelsCarryIDs(t *testing.T) {
	var mu sync.Mutex
	vus, uuids := map[string]int{}, map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		vus[r.Header.Get("X-VU")]++
		uuids[r.Header.Get("X-UUID")]++
		mu.Unlock()
	}))
	defer srv.Close()
	dir, path := writePlan(t, `name: worker-ids
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - name: GET order
        get: /order
        headers: {X-VU: "{{ vu }}", X-UUID: "{{ uuid }}"}
      - think: 100ms
load:
  stages:
    - {duration: 1s, users: 2}
`)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "sweep", path, "--users", "2,2", "--hold", "500ms", "--workers", "2", "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2\n%s", len(res.Levels), o)
	}
	var seeds []uint64
	for i, l := range res.Levels {
		if l.Result == nil || l.Result.Totals.Requests == 0 {
			t.Fatalf("level %d sent nothing\n%s", i+1, o)
		}
		if l.Result.Run.Seed == nil {
			t.Errorf("level %d records no seed: its segments drew from different ones", i+1)
		} else {
			seeds = append(seeds, *l.Result.Run.Seed)
		}
	}
	if len(seeds) == 2 && seeds[0] != seeds[1] {
		t.Errorf("levels drew from seeds %d and %d, want one for the test", seeds[0], seeds[1])
	}
	mu.Lock()
	defer mu.Unlock()
	// Two users a level, two levels: four users, as one process numbers
	// them (1, 2, then 3, 4).
	for _, want := range []string{"1", "2", "3", "4"} {
		if vus[want] == 0 {
			t.Errorf("no request from {{ vu }} %s; the server saw %v", want, vus)
		}
	}
	if len(vus) != 4 {
		t.Errorf("the server saw %d distinct {{ vu }} ids (%v), want 4", len(vus), vus)
	}
	dup := 0
	for _, n := range uuids {
		dup += n - 1
	}
	if dup > 0 {
		t.Errorf("%d {{ uuid }}s sent again (%d distinct)", dup, len(uuids))
	}
}
