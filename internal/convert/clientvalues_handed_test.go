package convert

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// idServer hands out a fresh id for each object made (in a Location
// header, a JSON field in upper case, a HAL link, an HTML link) and
// answers a GET for an id it never handed out with 404, as a real API does.
type idServer struct {
	mu       sync.Mutex
	issued   map[string]bool
	clients  map[string]bool
	notFound []string
}

// unrecordedBlob is the id the recording's POST /api/blobs handed out in
// a body the HAR left out: the server hands it to everyone.
const unrecordedBlob = "abcdef01-2345-4678-9abc-def012345678"

func newIDServer() *idServer {
	return &idServer{issued: map[string]bool{unrecordedBlob: true}, clients: map[string]bool{}}
}

func (s *idServer) fresh() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	s.issued[id] = true
	return id
}

var idPathRE = regexp.MustCompile(`^/api/(orders|items|things|guids|blobs|docs)/([^/]+)(/edit)?$`)

func (s *idServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPost {
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/orders":
			c, _ := in["clientId"].(string)
			s.clients[c] = true
			fmt.Fprintf(w, `{"id":%q,"status":"new"}`, s.fresh())
		case "/api/things":
			id := s.fresh()
			w.Header().Set("Location", "/api/things/"+id)
			fmt.Fprintf(w, `{"_links": {"self": {"href": "/api/things/%s"}}}`, id)
		case "/api/guids":
			fmt.Fprintf(w, `{"Id":%q}`, strings.ToUpper(s.fresh()))
		case "/api/blobs":
			fmt.Fprintf(w, `{"blobId":%q}`, unrecordedBlob)
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
		return
	}
	if r.URL.Path == "/page" {
		fmt.Fprintf(w, `<html><a href="/api/docs/%s/edit">x</a></html>`, s.fresh())
		return
	}
	m := idPathRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	known := s.issued[m[2]] || s.issued[strings.ToLower(m[2])]
	if m[1] == "orders" {
		known = s.clients[m[2]]
	}
	if !known {
		s.notFound = append(s.notFound, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

// runConverted converts the HAR fixture for srv and runs it for a few
// iterations, returning the plan's text and its result's request count.
func runConverted(t *testing.T, fixture string, srv *httptest.Server) (string, *Summary, int64) {
	t.Helper()
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	har := strings.ReplaceAll(string(raw), "http://127.0.0.1:18931", srv.URL)
	out, s, err := HAR([]byte(har), Options{Duration: 300 * time.Millisecond, MinThink: time.Hour})
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
	return string(out), &s, res.Totals.Requests
}

// Ids a response handed out other than as a whole value of the same case
// (a 201's Location path, an upper-case JSON id sent back in lower case)
// became {{ uuid }}, and each GET for one 404ed; an id in a response whose
// body the HAR left out did too. Converted from the reviewer's recording
// and run against a server that knows only the ids it issued, no request
// is refused.
func TestHandedOutIDsAreCapturedNotMadeUp(t *testing.T) {
	ids := newIDServer()
	srv := httptest.NewServer(ids)
	defer srv.Close()
	text, s, requests := runConverted(t, "testdata/handed_ids.har", srv)
	for _, want := range []string{
		`location: {header: Location}`,
		`get: /api/things/{{ trimPrefix(location, "/api/things/") }}`,
		`get: /api/guids/{{ lower(Id) }}`,
		`get: /api/blobs/` + unrecordedBlob,
		`noteId: '{{ uuid }}'`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "the body of POST /api/blobs, an earlier response, was not recorded") {
		t.Errorf("notes do not say why the blob id is kept:\n%s", notes)
	}
	checkNoneRefused(t, ids, requests, 10)
}

// A HAL link and an HTML link hand out ids inside a longer value: each is
// captured by a regex on the text before it, not made up.
func TestLinkedIDsAreCaptured(t *testing.T) {
	ids := newIDServer()
	srv := httptest.NewServer(ids)
	defer srv.Close()
	text, _, requests := runConverted(t, "testdata/handed_links.har", srv)
	if strings.Contains(text, "{{ uuid }}") {
		t.Errorf("an id the server handed out is made up:\n%s", text)
	}
	checkNoneRefused(t, ids, requests, 4)
}

func checkNoneRefused(t *testing.T, ids *idServer, requests int64, perIteration int64) {
	t.Helper()
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if len(ids.notFound) > 0 {
		t.Errorf("%d of %d requests asked for an id the server never handed out: %v", len(ids.notFound), requests, ids.notFound[:min(len(ids.notFound), 5)])
	}
	if requests < perIteration {
		t.Errorf("only %d requests ran, want at least one iteration of %d", requests, perIteration)
	}
}

// A UUID first sent in a GET's URL names something that exists: it is
// not made afresh, but kept and noted.
func TestUUIDFirstSentInGetURLIsKept(t *testing.T) {
	id := "0b6f3b52-5d0a-4c1e-9d55-3f8c2a1b7e90"
	har := harOf(t, entry{started: t0, ms: 5, method: "GET", url: "http://app.test/reports/" + id, status: 200},
		entry{started: t0, ms: 5, method: "DELETE", url: "http://app.test/reports/" + id, status: 204})
	_, text, s := load(t, har, Options{})
	if strings.Contains(text, "{{") || !strings.Contains(text, "get: /reports/"+id) {
		t.Errorf("the id is not kept as recorded:\n%s", text)
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "first sent in the URL of a GET") {
		t.Errorf("no note says why:\n%s", notes)
	}
}
