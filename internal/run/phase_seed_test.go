package run

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// setupDraws runs a plan with the given seed whose setup sends a plain
// {{ uuid }} and an expression's uuid() and choice(), and returns what the
// setup's request carried.
func setupDraws(t *testing.T, seed int) string {
	t.Helper()
	var mu sync.Mutex
	var got string
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/setup" {
			mu.Lock()
			got = r.URL.RawQuery
			mu.Unlock()
		}
	})
	src := `target: ` + srv.URL + `
seed: ` + strconv.Itoa(seed) + `
setup:
  - post: "/setup?a={{ uuid }}&b={{ uuid() }}&c={{ choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]) }}"
scenarios: {s: {steps: [{get: /load}, {think: 50ms}]}}
load: {grace: 1s, stages: [{duration: 100ms, users: 1}]}
`
	res, err := Run(context.Background(), mustPlan(t, src), Options{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	mu.Lock()
	defer mu.Unlock()
	if got == "" {
		t.Fatal("the setup sent nothing")
	}
	return got
}

// A plan's seed reproduces the setup's draws, and another seed changes
// them: the setup's user was seeded with 0 whatever the run's seed, and
// uuid() and choice() drew from the process's generator.
func TestSeedReproducesSetupDraws(t *testing.T) {
	a, b := setupDraws(t, 7), setupDraws(t, 7)
	if a != b {
		t.Fatalf("seed 7 twice: the setup sent %q then %q", a, b)
	}
	if c := setupDraws(t, 8); c == a {
		t.Fatalf("seeds 7 and 8: the setup sent %q both times", a)
	}
}

// The teardown draws apart from the setup: both are user 0, and a
// teardown that sent the setup's uuid again (an id, an idempotency key)
// would find what the setup made instead of making its own.
func TestTeardownDrawsApartFromSetup(t *testing.T) {
	var mu sync.Mutex
	sent := map[string]string{}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent[r.URL.Path] = r.URL.Query().Get("id")
		mu.Unlock()
	})
	src := `target: ` + srv.URL + `
seed: 7
setup: [{post: "/setup?id={{ uuid }}"}]
teardown: [{delete: "/teardown?id={{ uuid }}"}]
scenarios: {s: {steps: [{get: /load}, {think: 50ms}]}}
load: {grace: 1s, stages: [{duration: 100ms, users: 1}]}
`
	res, err := Run(context.Background(), mustPlan(t, src), Options{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	mu.Lock()
	defer mu.Unlock()
	if sent["/setup"] == "" || sent["/teardown"] == "" {
		t.Fatalf("sent %v: want a setup and a teardown", sent)
	}
	if sent["/setup"] == sent["/teardown"] {
		t.Fatalf("the teardown sent the setup's uuid %s", sent["/setup"])
	}
}
