package convert

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// A UUID the client made and sent twice (an object created, then read
// back) was left as recorded, so every iteration of every user sent the
// same one. Converted and run against a loopback server, each iteration
// now sends one fresh value in both requests.
func TestSharedClientUUIDIsDrawnPerIteration(t *testing.T) {
	var mu sync.Mutex
	var got []string // "POST id" / "GET id" in arrival order
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/carts/")
		if r.Method == http.MethodPost {
			id = r.Header.Get("Idempotency-Key")
		}
		mu.Lock()
		got = append(got, r.Method+" "+id)
		mu.Unlock()
	}))
	defer srv.Close()
	cart := "7d444840-9dc0-11d1-b245-5ffdce74fad2"
	har := harOf(t,
		entry{started: t0, ms: 5, method: "POST", url: srv.URL + "/carts", reqH: map[string]string{"Idempotency-Key": cart}, status: 201},
		entry{started: t0, ms: 5, method: "GET", url: srv.URL + "/carts/" + cart, status: 200},
	)
	out, _, err := HAR(har, Options{Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("converted.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	res, err := run.Run(context.Background(), p, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	pairs := 0
	for i := 0; i+1 < len(got); i += 2 {
		post, get := got[i], got[i+1]
		if !strings.HasPrefix(post, "POST ") || !strings.HasPrefix(get, "GET ") {
			t.Fatalf("request %d: %q then %q, want POST then GET", i, post, get)
		}
		id := strings.TrimPrefix(post, "POST ")
		if strings.TrimPrefix(get, "GET ") != id || !uuidRE.MatchString(id) || id == cart {
			t.Fatalf("iteration %d: POST sent %q, GET asked for %q: want one fresh UUID in both\n%s", i/2+1, id, get, out)
		}
		if seen[id] {
			t.Fatalf("iteration %d sent %s again", i/2+1, id)
		}
		seen[id] = true
		pairs++
	}
	if pairs < 2 {
		t.Fatalf("only %d iterations ran (%d requests recorded; result %d requests)", pairs, len(got), res.Totals.Requests)
	}
}

// A client-made UUID inside a longer value (a prefixed key, a raw text
// body) was left as recorded: only a value that was a UUID and nothing
// else became {{ uuid }}.
func TestEmbeddedClientUUIDBecomesFresh(t *testing.T) {
	har := harOf(t,
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/orders?ref=web-0b6f3b52-5d0a-4c1e-9d55-3f8c2a1b7e90",
			reqMime: "application/json", reqText: `{"key":"order-11111111-2222-4333-8444-555555555555","qty":1}`, status: 201},
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/log", reqMime: "text/plain",
			reqText: "event=checkout id=22222222-3333-4444-8555-666666666666 done", status: 204},
	)
	_, text, s := load(t, har, Options{})
	for _, want := range []string{
		"post: /orders?ref=web-{{ uuid }}",
		"key: order-{{ uuid }}",
		"body: event=checkout id={{ uuid }} done",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if len(s.Generated) != 3 {
		t.Errorf("generated %v, want 3", s.Generated)
	}
}

// What one recorded user typed is a note, not silently every user's
// value: a field sent with different values to one request, and a user
// name a sign-up sends (unique on the server: the second iteration fails).
func TestTypedValuesAreNoted(t *testing.T) {
	har := harOf(t,
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/admin/auth/user/add/", reqMime: "application/x-www-form-urlencoded",
			reqText: "username=loadtest1&password1=pw&password2=pw", status: 302},
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/polls/", reqMime: "application/json", reqText: `{"question":"Tea?"}`, status: 201},
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/polls/", reqMime: "application/json", reqText: `{"question":"Coffee?"}`, status: 201},
	)
	_, _, s := load(t, har, Options{})
	notes := strings.Join(s.Notes, "\n")
	for _, want := range []string{
		`POST /admin/auth/user/add/: field username sends "loadtest1" for every user and iteration`,
		`POST /polls/: field question was sent with 2 different values ("Tea?", "Coffee?")`,
		"{{ data.SOURCE.question }}",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "password1") {
		t.Errorf("a field recorded once with one value is noted:\n%s", notes)
	}
}
