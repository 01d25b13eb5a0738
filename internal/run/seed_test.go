package run

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// uuidsOf runs plan src against a server that records the uuid each
// request carries, and returns them in the order each user sent them.
func uuidsOf(t *testing.T, src func(url string) string) (map[string][]string, *uint64) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string][]string{}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Query().Get("vu")] = append(seen[r.URL.Query().Get("vu")], r.URL.Query().Get("id"))
		mu.Unlock()
	})
	res, err := Run(context.Background(), mustPlan(t, src(srv.URL)), Options{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	mu.Lock()
	defer mu.Unlock()
	return seen, res.Run.Seed
}

// Two runs of a plan without a seed must not send the same {{ uuid }}s:
// a target that keeps what it is sent would answer the second run with
// conflicts the load did not cause. Users were seeded by their number
// alone, so every run drew the same sequence.
func TestRunsWithoutSeedDrawDifferentUUIDs(t *testing.T) {
	src := func(url string) string {
		return `
target: ` + url + `
scenarios: {s: {steps: [{get: "/?vu={{ vu }}&id={{ uuid }}"}, {think: 50ms}]}}
load: {grace: 1s, stages: [{duration: 300ms, users: 2}]}
`
	}
	a, seedA := uuidsOf(t, src)
	b, seedB := uuidsOf(t, src)
	if seedA == nil || seedB == nil {
		t.Fatalf("result seeds %v, %v: want both recorded", seedA, seedB)
	}
	first := map[string]bool{}
	for _, ids := range a {
		for _, id := range ids {
			first[id] = true
		}
	}
	if len(first) == 0 {
		t.Fatal("the first run sent no uuid")
	}
	for vu, ids := range b {
		for _, id := range ids {
			if first[id] {
				t.Fatalf("user %s of the second run sent %s, which the first run sent too (seeds %d, %d)", vu, id, *seedA, *seedB)
			}
		}
	}
}

// A plan's seed repeats a run's draws exactly, and the result says which
// seed it drew from.
func TestPlanSeedRepeatsDraws(t *testing.T) {
	src := func(url string) string {
		return `
target: ` + url + `
seed: 42
scenarios: {s: {steps: [{get: "/?vu={{ vu }}&id={{ uuid }}-{{ rand_int(1, 1000000) }}"}, {think: 50ms}]}}
load: {grace: 1s, stages: [{duration: 300ms, users: 2}]}
`
	}
	a, seedA := uuidsOf(t, src)
	b, _ := uuidsOf(t, src)
	if seedA == nil || *seedA != 42 {
		t.Fatalf("result seed %v, want 42", seedA)
	}
	for vu, ids := range a {
		other := b[vu]
		// Each run may stop a user after a different number of
		// iterations; what both sent must be the same sequence.
		n := min(len(ids), len(other))
		if n == 0 {
			t.Fatalf("user %s sent nothing in one run (%d, %d)", vu, len(ids), len(other))
		}
		if !slices.Equal(ids[:n], other[:n]) {
			t.Fatalf("user %s drew %v, then %v with the same seed", vu, ids[:n], other[:n])
		}
	}
}
