package vu

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// seenRequest is what a test server decoded from one request.
type seenRequest struct {
	proto, encoding, ctype string
	body                   []byte
	fields                 map[string]string
	files                  map[string][]byte // by field name
	fileTypes              map[string]string
}

// bodyServer records every request's decoded body: gunzipped when sent
// with Content-Encoding: gzip, split into parts when multipart.
func bodyServer(t *testing.T, h2c bool) (string, func() []seenRequest) {
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seenRequest{proto: r.Proto, encoding: r.Header.Get("Content-Encoding"), ctype: r.Header.Get("Content-Type")}
		var body io.Reader = r.Body
		if s.encoding == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		s.body, _ = io.ReadAll(body)
		if mt, params, _ := mime.ParseMediaType(s.ctype); mt == "multipart/form-data" {
			s.fields, s.files, s.fileTypes = map[string]string{}, map[string][]byte{}, map[string]string{}
			mr := multipart.NewReader(bytes.NewReader(s.body), params["boundary"])
			for {
				p, err := mr.NextPart()
				if err != nil {
					if err != io.EOF {
						http.Error(w, err.Error(), 400)
						return
					}
					break
				}
				v, _ := io.ReadAll(p)
				if p.FileName() == "" {
					s.fields[p.FormName()] = string(v)
				} else {
					s.files[p.FormName()] = v
					s.fileTypes[p.FormName()] = p.Header.Get("Content-Type") + " " + p.FileName()
				}
			}
		}
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}))
	if h2c {
		var pr http.Protocols
		pr.SetHTTP1(true)
		pr.SetUnencryptedHTTP2(true)
		srv.Config.Protocols = &pr
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

// bodyUser compiles a plan written into dir (so its files resolve there)
// and makes user 1 of it.
func bodyUser(t *testing.T, dir, yaml, base string, o httpc.Options) (*User, *Scenario, *metrics.Recorder) {
	file := filepath.Join(dir, "p.yaml")
	src := "target: " + base + "\n" + yaml + "load: {stages: [{duration: 1s, users: 1}]}\n"
	p, err := plan.Parse(file, []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	sh := httpc.NewShared(o)
	t.Cleanup(sh.Close)
	u := prog.NewUser(1, sh.NewTransport(), rec)
	t.Cleanup(u.Close)
	return u, prog.ScenarioFor(0), rec
}

func iterate(t *testing.T, u *User, sc *Scenario, n int) {
	t.Helper()
	stop := Stop{Soft: make(chan struct{})}
	for i := 0; i < n; i++ {
		if err := u.Iterate(sc, time.Time{}, stop); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBodies sends each new kind of body and checks what the server
// decoded: gzip bodies rendered per request and finished at load, a
// multipart upload with a templated field and a file, and a body_file.
func TestBodies(t *testing.T) {
	dir := t.TempDir()
	photo := bytes.Repeat([]byte("\x89PNG\r\n\x1a\n photo bytes \x00\xff"), 500)
	if err := os.WriteFile(filepath.Join(dir, "cat.png"), photo, 0o644); err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"order": [1, 2, 3]}`)
	if err := os.WriteFile(filepath.Join(dir, "order.json"), payload, 0o644); err != nil {
		t.Fatal(err)
	}
	base, seen := bodyServer(t, false)
	u, sc, _ := bodyUser(t, dir, `scenarios:
  s:
    steps:
      - {post: /a, json: {n: "{{ iter }}"}, gzip: true}
      - {post: /b, body: static text, gzip: true}
      - post: /c
        multipart:
          title: "photo {{ iter }}"
          meta: {value: '{"k":1}', content_type: application/json}
          photo: {file: cat.png}
      - {put: /d, body_file: order.json}
      - {post: /e, body_file: cat.png, gzip: true, headers: {Content-Type: image/png}}
`, base, httpc.Options{})
	iterate(t, u, sc, 3)
	got := seen()
	if len(got) != 15 {
		t.Fatalf("server saw %d requests, want 15", len(got))
	}
	for i := 0; i < 3; i++ {
		a, b, c, d, e := got[5*i], got[5*i+1], got[5*i+2], got[5*i+3], got[5*i+4]
		if want := `{"n":"` + string(rune('0'+i)) + `"}`; a.encoding != "gzip" || string(a.body) != want || a.ctype != "application/json" {
			t.Errorf("iteration %d, templated gzip json: %q %q %q, want gzip %s application/json", i, a.encoding, a.body, a.ctype, want)
		}
		if b.encoding != "gzip" || string(b.body) != "static text" {
			t.Errorf("iteration %d, static gzip body: %q %q", i, b.encoding, b.body)
		}
		if want := "photo " + string(rune('0'+i)); c.fields["title"] != want || c.fields["meta"] != `{"k":1}` {
			t.Errorf("iteration %d, multipart fields %q, want title %q and meta", i, c.fields, want)
		}
		if !bytes.Equal(c.files["photo"], photo) || c.fileTypes["photo"] != "image/png cat.png" {
			t.Errorf("iteration %d, multipart file: %d bytes (want %d), type and name %q", i, len(c.files["photo"]), len(photo), c.fileTypes["photo"])
		}
		if !bytes.Equal(d.body, payload) || d.ctype != "application/json" || d.encoding != "" {
			t.Errorf("iteration %d, body_file: %q %q %q", i, d.body, d.ctype, d.encoding)
		}
		if !bytes.Equal(e.body, photo) || e.encoding != "gzip" || e.ctype != "image/png" {
			t.Errorf("iteration %d, gzip body_file: %d bytes %q %q", i, len(e.body), e.encoding, e.ctype)
		}
	}
}

// TestStaticBodyShared: a body finished at load is sent from the plan's
// bytes, not copied into each user's buffer, so users uploading one big
// file hold it once between them.
func TestStaticBodyShared(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	base, seen := bodyServer(t, false)
	u, sc, _ := bodyUser(t, dir, "scenarios: {s: {steps: [{post: /, body_file: big.bin}]}}\n", base, httpc.Options{})
	iterate(t, u, sc, 2)
	st := sc.Steps[0]
	if len(st.StaticBody) != len(big) || &u.req.Body[0] != &st.StaticBody[0] {
		t.Fatalf("the request body is not the step's shared bytes")
	}
	if cap(u.body.raw) != 0 {
		t.Fatalf("user grew a body buffer of %d bytes for a static body", cap(u.body.raw))
	}
	if got := seen(); len(got) != 2 || !bytes.Equal(got[1].body, big) {
		t.Fatalf("server saw %d requests, or the wrong body", len(got))
	}
}

// TestH2C: with http: {version: h2c} plain-HTTP requests go as HTTP/2
// with prior knowledge, bodies included, over one shared connection.
func TestH2C(t *testing.T) {
	base, seen := bodyServer(t, true)
	u, sc, rec := bodyUser(t, t.TempDir(), `http: {version: h2c}
scenarios:
  s:
    steps:
      - {get: /x}
      - {post: /y, json: {a: "{{ iter }}"}, gzip: true, expect: {status: 200}}
`, base, httpc.Options{H2C: true})
	iterate(t, u, sc, 2)
	got := seen()
	if len(got) != 4 {
		t.Fatalf("server saw %d requests, want 4", len(got))
	}
	for _, s := range got {
		if s.proto != "HTTP/2.0" {
			t.Fatalf("request went as %s, want HTTP/2.0", s.proto)
		}
	}
	if string(got[3].body) != `{"a":"1"}` {
		t.Fatalf("gzip body over h2c decoded to %q", got[3].body)
	}
	for _, st := range rec.Snapshot().Steps {
		if st.Requests != 2 || st.Failed != 0 {
			t.Errorf("step %s: %d requests, %d failed (%v), want 2 and 0", st.Name, st.Requests, st.Failed, st.ByClass)
		}
	}
}

// TestH2CFailuresClassified: an h2c request to a port nobody listens on
// fails as conn_refused, and to a server that speaks only HTTP/1.1 as a
// reset or protocol failure, each counted once per request as on the
// HTTP/1.1 path.
func TestH2CFailuresClassified(t *testing.T) {
	closed := "http://" + hostile.Refused(t)
	u, sc, rec := bodyUser(t, t.TempDir(), "scenarios: {s: {steps: [{get: /x}]}}\n", closed, httpc.Options{H2C: true})
	iterate(t, u, sc, 3)
	st := rec.Snapshot().Steps[0]
	if st.Requests != 3 || st.ByClass["conn_refused"] != 3 {
		t.Fatalf("closed port over h2c: %d requests, classes %v; want 3 conn_refused", st.Requests, st.ByClass)
	}

	h1only := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(h1only.Close)
	u, sc, rec = bodyUser(t, t.TempDir(), "scenarios: {s: {steps: [{get: /x}]}}\n", h1only.URL, httpc.Options{H2C: true, MaxKeptBody: 0})
	iterate(t, u, sc, 2)
	st = rec.Snapshot().Steps[0]
	if st.Requests != 2 || st.Failed != 2 {
		t.Fatalf("HTTP/1.1-only server over h2c: %d requests, %d failed (%v); want 2 failed", st.Requests, st.Failed, st.ByClass)
	}
	t.Logf("h2c to an HTTP/1.1-only server fails as %v", st.ByClass)
}

// TestBodyRenderAllocs: rendering a templated gzip body reuses the user's
// buffers and a pooled compressor, and a static body is the shared bytes,
// so neither allocates once warm.
func TestBodyRenderAllocs(t *testing.T) {
	base, _ := bodyServer(t, false)
	u, sc, _ := bodyUser(t, t.TempDir(), `scenarios:
  s:
    steps:
      - {post: /a, json: {n: "{{ iter }}", v: "{{ vu }}"}, gzip: true}
      - {post: /b, body: static text, gzip: true}
`, base, httpc.Options{})
	for _, st := range sc.Steps {
		u.body.render(st, &u.env)
		if raceEnabled {
			break
		}
		if n := testing.AllocsPerRun(200, func() { u.body.render(st, &u.env) }); n != 0 {
			t.Errorf("step %s: %v allocs per render, want 0", st.Name, n)
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(u.body.render(sc.Steps[0], &u.env)))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != `{"n":"0","v":"1"}` {
		t.Fatalf("rendered %q", b)
	}
}
