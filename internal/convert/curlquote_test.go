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

// A $ inside single quotes (or $'…', or escaped) is text, as the shell
// and so curl take it: Chrome's "Copy as cURL" single-quotes an OData
// URL's $select and $top, which became ${select} and ${top} references,
// so the plan did not load. Outside them, $NAME is still the variable.
func TestCurlDollarInSingleQuotesIsText(t *testing.T) {
	cases := []struct{ cmd, want, not string }{
		{`curl 'http://127.0.0.1:18932/v1.0/me/messages?$select=subject,from&$top=5'`, "get: /v1.0/me/messages?$select=subject,from&$top=5", "${"},
		{`curl $'http://h.test/x?$filter=a' -H 'X-Price: $5 ${NOT_A_VAR}'`, "X-Price: $5 $${NOT_A_VAR}", "${filter}"},
		{`curl "http://h.test/x?\$skip=2"`, "get: /x?$skip=2", "${skip}"},
		{`curl "http://h.test/x?key=$API_KEY" -H "Authorization: Bearer $TOKEN"`, "get: /x?key=${API_KEY}", "$API_KEY"},
	}
	for _, c := range cases {
		out, _, err := Curl(c.cmd, Options{})
		if err != nil {
			t.Errorf("%s: %v", c.cmd, err)
			continue
		}
		text := string(out)
		if !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
			t.Errorf("%s: want %q and no %q in\n%s", c.cmd, c.want, c.not, text)
		}
	}
	// With nothing set in the environment, the OData plan loads and sends
	// the query as curl would.
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
	}))
	defer srv.Close()
	out, _, err := Curl(`curl '`+srv.URL+`/v1.0/me/messages?$select=subject,from&$top=5'`, Options{Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("c.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := run.Run(context.Background(), p, run.Options{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) == 0 || queries[0] != "$select=subject,from&$top=5" {
		t.Fatalf("the server got queries %q", queries[:min(len(queries), 3)])
	}
}

// The converted curl plan is loaded before it is handed back, with only
// the variables the command named set: one that reads a variable nobody
// named is refused as the converter's fault.
func TestCurlPlanIsCheckedBeforeWriting(t *testing.T) {
	if _, err := loadChecked([]byte("name: x\ntarget: http://h.test\nscenarios:\n  s:\n    steps:\n      - get: /x?${select}\n"), nil, nil); err == nil || !strings.Contains(err.Error(), "select") {
		t.Errorf("a plan reading an unnamed variable passed: %v", err)
	}
	if _, _, err := Curl(`curl "http://h.test/x?key=$API_KEY"`, Options{}); err != nil {
		t.Errorf("a named variable refused: %v", err)
	}
}

// curl -u "$SID:$TOKEN" sends the token as it is; in the plan's target a
// token holding / failed to load, and one holding %20 was sent as a
// space. Run against a loopback server, the Basic credentials arrive as
// the environment holds them.
func TestCurlUserFromEnvArrivesAsSet(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		u, pw, _ := r.BasicAuth()
		mu.Lock()
		got = append(got, u+":"+pw)
		mu.Unlock()
	}))
	defer srv.Close()
	out, _, err := Curl(`curl -u "$SID:$TOKEN" `+srv.URL+`/x`, Options{Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SID": "AC1", "TOKEN": "longsecret/with+slash=%20#x"}
	p, err := plan.Parse("c.yaml", out, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := run.Run(context.Background(), p, run.Options{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "AC1:longsecret/with+slash=%20#x" {
		t.Fatalf("the server got %q", got[:min(len(got), 3)])
	}
}
