package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/result"
)

// The backoff's bound doubles with each failure in a row from the first
// delay up to the max; without jitter the wait is the bound.
func TestBackoffSequence(t *testing.T) {
	r := plan.Retry{Initial: time.Second, Max: 8 * time.Second}
	want := []time.Duration{1, 1, 2, 4, 8, 8, 8}
	for fails, w := range want {
		if got := backoffWait(r, fails, 0.5); got != w*time.Second {
			t.Errorf("after %d failures: %v, want %v", fails, got, w*time.Second)
		}
	}
	if got := backoffBound(plan.Retry{Initial: time.Second, Max: time.Hour}, 200); got != time.Hour {
		t.Errorf("after 200 failures: %v, want the max", got)
	}
}

// Full jitter spreads a fleet's waits evenly from zero to the bound: the
// draws of 10,000 slots fall about a tenth into each tenth of it, the
// same seed draws the same waits, another seed others.
func TestBackoffJitterSpread(t *testing.T) {
	r := plan.Retry{Initial: time.Second, Max: 30 * time.Second, Jitter: true}
	bound := backoffBound(r, 3) // 4s
	var buckets [10]int
	same, moved := 0, 0
	for idx := range 10000 {
		w := backoffWait(r, 3, unitDraw(42, idx, 7))
		if w < 0 || w >= bound {
			t.Fatalf("slot %d: wait %v outside [0, %v)", idx, w, bound)
		}
		buckets[int(w*10/bound)]++
		if backoffWait(r, 3, unitDraw(42, idx, 7)) == w {
			same++
		}
		if backoffWait(r, 3, unitDraw(43, idx, 7)) != w {
			moved++
		}
	}
	for i, n := range buckets {
		// 1,000 expected; the binomial's standard deviation is 30.
		if n < 850 || n > 1150 {
			t.Errorf("tenth %d of the bound holds %d of 10,000 waits: %v", i, n, buckets)
		}
	}
	if same != 10000 || moved < 9990 {
		t.Errorf("same seed same wait %d/10000, another seed another wait %d/10000", same, moved)
	}
	// Successive draws of one slot differ too.
	if unitDraw(42, 5, 1) == unitDraw(42, 5, 2) {
		t.Error("a slot's successive draws are equal")
	}
}

// quotaServer refuses every negotiate with 429 and retryAfter (none when
// empty), counting them.
func quotaServer(t *testing.T, retryAfter string, count *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		count.Add(1)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		http.Error(w, "Connection count reaches limit.", http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server's Retry-After is a floor under the backoff: with a 10 ms
// backoff, four slots refused with Retry-After: 5 make one attempt each
// in a 1.5 s run (without it they would make dozens), every one of them
// is counted waiting at once, and the waits are counted as lengthened.
func TestRetryAfterHonoured(t *testing.T) {
	leakCheck(t)
	var negotiates atomic.Int64
	srv := quotaServer(t, "5", &negotiates)
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  display: {users: 4, signalr: {url: /hubs/full, reconnect: {initial: 10ms, max: 20ms}}}
load: {grace: 1s, stages: [{duration: 1500ms, users: 1}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	cs := connScenario(t, res, "display")
	checkConnSums(t, cs)
	if cs.Attempts != 4 || negotiates.Load() != 4 || cs.RetryAfter != 4 || cs.ByClass["rate_limited"] != 4 {
		t.Errorf("attempts %d (server saw %d), waits lengthened %d, by class %v; want 4 of each", cs.Attempts, negotiates.Load(), cs.RetryAfter, cs.ByClass)
	}
	if cs.PeakWaiting != 4 || slices.Max(cs.WaitingPerS) != 4 {
		t.Errorf("peak waiting %d, series %v; want 4", cs.PeakWaiting, cs.WaitingPerS)
	}
	checkAttemptSeries(t, cs)
}

// checkAttemptSeries: the attempts started each second sum to the
// attempts, once the run is over.
func checkAttemptSeries(t *testing.T, cs result.ConnScenario) {
	t.Helper()
	var sum int64
	for _, n := range cs.AttemptsPerS {
		sum += n
	}
	if sum != cs.Attempts {
		t.Errorf("attempts per second %v sum to %d, attempts %d", cs.AttemptsPerS, sum, cs.Attempts)
	}
}

// After its attempts in a row fail, a slot gives up for the rest of the
// run: five slots with three attempts make exactly fifteen in a 3 s run, and all five
// are counted as given up.
func TestRetryAttemptsBounded(t *testing.T) {
	leakCheck(t)
	var negotiates atomic.Int64
	srv := quotaServer(t, "", &negotiates)
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  display: {users: 5, signalr: {url: /hubs/full, reconnect: {initial: 1ms, max: 4ms, attempts: 3}}}
load: {grace: 1s, stages: [{duration: 3s, users: 1}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	cs := connScenario(t, res, "display")
	checkConnSums(t, cs)
	if cs.Attempts != 15 || negotiates.Load() != 15 || cs.GaveUp != 5 || cs.Failed != 15 {
		t.Errorf("attempts %d (server saw %d), failed %d, gave up %d; want 15, 15, 15, 5", cs.Attempts, negotiates.Load(), cs.Failed, cs.GaveUp)
	}
	if neg := connStep(t, res, "display", "negotiate"); neg.Failed != 15 {
		t.Errorf("negotiate step failed %d, want 15", neg.Failed)
	}
	if cs.PeakWaiting < 1 || cs.PeakWaiting > 5 {
		t.Errorf("peak waiting %d, want 1..5", cs.PeakWaiting)
	}
	checkAttemptSeries(t, cs)
}

// refusedWith is the error of a negotiate refused with 429 and
// Retry-After: retryAfter.
func refusedWith(t *testing.T, retryAfter string) error {
	t.Helper()
	var n atomic.Int64
	srv := quotaServer(t, retryAfter, &n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := signalr.Connect(ctx, srv.URL+"/hub", nil, &signalr.Options{})
	if _, ok := signalr.RetryAfter(err); !ok {
		t.Fatalf("no Retry-After in %v", err)
	}
	return err
}

// A Retry-After is a floor, and widens the jitter to at least itself: a
// thousand slots refused with Retry-After: 5 after their first failure
// (bound 1s) wait 5 to 10 s, about a fifth in each second of that, not
// all between 5 and 6 s. Without jitter the wait is the longer of the two.
func TestRetryAfterSpreadsTheFleet(t *testing.T) {
	err := refusedWith(t, "5")
	p := &population{spec: &plan.Connection{Retry: plan.Retry{Initial: time.Second, Max: 30 * time.Second, Jitter: true}}}
	var perSecond [5]int
	for idx := range 1000 {
		w := p.retryWait(1, err, unitDraw(7, idx, 1))
		if w < 5*time.Second || w >= 10*time.Second {
			t.Fatalf("slot %d waits %v, want 5s..10s", idx, w)
		}
		perSecond[(w-5*time.Second)/time.Second]++
	}
	for i, n := range perSecond {
		if n < 140 || n > 260 { // 200 expected; the binomial's standard deviation is 13
			t.Errorf("second %d after the Retry-After holds %d of 1,000 retries: %v", i+5, n, perSecond)
		}
	}
	if p.retryAfters.Load() != 1000 {
		t.Errorf("waits lengthened %d, want 1000", p.retryAfters.Load())
	}
	p.spec.Retry.Jitter = false
	if w := p.retryWait(1, err, 0.5); w != 5*time.Second {
		t.Errorf("no jitter, Retry-After 5s over a 1s bound: %v", w)
	}
	if w := p.retryWait(5, err, 0.5); w != 16*time.Second {
		t.Errorf("no jitter, a 16s bound over Retry-After 5s: %v", w)
	}
}

// A WebSocket upgrade refused with 429 and Retry-After waits as long as a
// refused negotiate does: one attempt each in a 1.5 s run.
func TestRetryAfterOnWebSocketUpgrade(t *testing.T) {
	leakCheck(t)
	var upgrades atomic.Int64
	srv := quotaServer(t, "5", &upgrades)
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  ticker: {users: 4, websocket: {url: /ws, reconnect: {initial: 10ms, max: 20ms}, steps: [{hold: 1s}]}}
load: {grace: 1s, stages: [{duration: 1500ms, users: 1}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	cs := connScenario(t, res, "ticker")
	checkConnSums(t, cs)
	if cs.Attempts != 4 || upgrades.Load() != 4 || cs.RetryAfter != 4 || cs.ByClass["rate_limited"] != 4 || cs.PeakWaiting != 4 {
		t.Errorf("attempts %d (server saw %d), waits lengthened %d, by class %v, peak waiting %d; want 4 of each", cs.Attempts, upgrades.Load(), cs.RetryAfter, cs.ByClass, cs.PeakWaiting)
	}
}
