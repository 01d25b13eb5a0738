package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/e2etest"
)

// votingApp puts a browser front end on the demo target's voting flow: a
// page that hands out a CSRF token, a session endpoint that trades it for
// a bearer token, and votes that need that token. Each token works once,
// so a plan that replays the recorded ones fails: only captured tokens
// pass.
type votingApp struct {
	demo *demo.Server
	mu   sync.Mutex
	csrf map[string]bool
	auth map[string]bool
	// What the app saw: votes let through with a live token, and requests
	// refused for a stale or missing one.
	votesIn, refused atomic.Int64
	thirdParty       string
}

func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

const votingJS = `
async function vote() {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const csrf = document.querySelector('meta[name=csrf-token]').content;
  const s = await (await fetch('/session', {method: 'POST', headers: {'X-CSRF-Token': csrf}})).json();
  await sleep(400);
  const ps = await (await fetch('/elections/2026/parties')).json();
  await sleep(400);
  const r = await fetch('/votes', {method: 'POST', headers: {
    'Authorization': 'Bearer ' + s.token, 'voter-id': crypto.randomUUID(),
    'election-district-id': 'd7', 'Content-Type': 'application/json'},
    body: JSON.stringify({partyId: ps.parties[2].id})});
  if (r.status !== 201) throw new Error('vote: ' + r.status);
  await sleep(400);
  return (await (await fetch('/votes/d7/count')).json()).count;
}`

func (a *votingApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		tok := newToken()
		a.mu.Lock()
		a.csrf[tok] = true
		a.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><meta name="csrf-token" content="%s">
<link rel="stylesheet" href="/style.css"><script src="/app.js"></script></head>
<body><h1>Vote</h1><img src="%s/logo.png" alt=""></body></html>`, tok, a.thirdParty)
		return
	case "/style.css":
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, "h1{color:#333}")
		return
	case "/app.js":
		w.Header().Set("Content-Type", "application/javascript")
		fmt.Fprint(w, votingJS)
		return
	case "/favicon.ico":
		http.NotFound(w, r)
		return
	case "/session":
		a.mu.Lock()
		ok := a.csrf[r.Header.Get("X-CSRF-Token")]
		delete(a.csrf, r.Header.Get("X-CSRF-Token"))
		tok := newToken()
		if ok {
			a.auth[tok] = true
		}
		a.mu.Unlock()
		if !ok || r.Method != http.MethodPost {
			a.refused.Add(1)
			http.Error(w, `{"error":"bad csrf token"}`, http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":%q}`, tok)
		return
	case "/votes":
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		ok := a.auth[tok]
		delete(a.auth, tok)
		a.mu.Unlock()
		if !ok {
			a.refused.Add(1)
			http.Error(w, `{"error":"bad bearer token"}`, http.StatusUnauthorized)
			return
		}
		a.votesIn.Add(1)
	}
	a.demo.Handler().ServeHTTP(w, r)
}

// harEntry is what the recorder keeps of one request, in HAR 1.2 terms.
type harRec struct {
	id       network.RequestID
	wall     float64 // seconds since the epoch
	ts, end  float64 // monotonic seconds
	method   string
	url      string
	reqH     network.Headers
	post     []byte
	resType  string
	status   int64
	respH    network.Headers
	mime     string
	body     []byte
	finished bool
}

// recordHAR opens url in headless Chromium, runs js (which returns a
// promise), and writes what went over the network as a HAR file, the way
// DevTools' "Save all as HAR" does: from the Network domain's events and
// the bodies the browser kept.
func recordHAR(t *testing.T, url, js string) []byte {
	t.Helper()
	exe := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI containers run as root, where Chromium's sandbox cannot start
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	var mu sync.Mutex
	var order []*harRec
	byID := map[network.RequestID]*harRec{}
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if prev := byID[ev.RequestID]; prev != nil && ev.RedirectResponse != nil {
				// The same id goes on after a redirect: the hop ends here.
				prev.status, prev.respH, prev.mime = ev.RedirectResponse.Status, ev.RedirectResponse.Headers, ev.RedirectResponse.MimeType
				prev.end, prev.finished = ev.Timestamp.Float64(), true
				prev.id = ""
			}
			r := &harRec{id: ev.RequestID, wall: ev.WallTime.Float64(), ts: ev.Timestamp.Float64(),
				method: ev.Request.Method, url: ev.Request.URL, reqH: ev.Request.Headers, resType: string(ev.Type)}
			for _, e := range ev.Request.PostDataEntries {
				r.post = append(r.post, e.Bytes...)
			}
			byID[ev.RequestID] = r
			order = append(order, r)
		case *network.EventResponseReceived:
			if r := byID[ev.RequestID]; r != nil {
				r.status, r.respH, r.mime = ev.Response.Status, ev.Response.Headers, ev.Response.MimeType
			}
		case *network.EventLoadingFinished:
			if r := byID[ev.RequestID]; r != nil {
				r.end, r.finished = ev.Timestamp.Float64(), true
			}
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("chromium: open %s: %v", url, err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool]("typeof vote === 'function'", chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("chromium: the page's script never loaded: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("chromium: %s: %v", js, err)
	}
	// Bodies are asked for once every load has finished, as DevTools
	// does when it saves.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		done := true
		for _, r := range order {
			done = done && (r.finished || r.status == 0 && r.resType == "Other")
		}
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var entries []map[string]any
	for _, r := range order {
		if r.id != "" && r.finished {
			id := r.id
			res, err := chromedp.Run(bctx, chromedp.Action[network.GetResponseBodyResult](func(ctx context.Context, tg *chromedp.Target) (network.GetResponseBodyResult, error) {
				return cdp.Call(ctx, tg, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
			}))
			if err == nil {
				r.body = res.Body
			}
		}
		content := map[string]any{"mimeType": r.mime, "size": len(r.body)}
		if len(r.body) > 0 {
			// Bodies go base64, as DevTools writes binary ones; the
			// converter must read them either way.
			content["text"], content["encoding"] = base64.StdEncoding.EncodeToString(r.body), "base64"
		}
		req := map[string]any{"method": r.method, "url": r.url, "headers": harHeaders(r.reqH)}
		if len(r.post) > 0 {
			ct, _ := r.reqH["Content-Type"].(string)
			req["postData"] = map[string]any{"mimeType": ct, "text": string(r.post)}
		}
		e := map[string]any{
			"startedDateTime": time.UnixMicro(int64(r.wall * 1e6)).UTC().Format(time.RFC3339Nano),
			"time":            -1.0,
			"request":         req,
			"response":        map[string]any{"status": r.status, "headers": harHeaders(r.respH), "content": content},
			"_resourceType":   strings.ToLower(r.resType),
		}
		if r.finished {
			e["time"] = (r.end - r.ts) * 1000
		}
		entries = append(entries, e)
	}
	b, err := json.MarshalIndent(map[string]any{"log": map[string]any{
		"version": "1.2", "creator": map[string]string{"name": "stampede e2e (chromedp)", "version": "1"}, "entries": entries,
	}}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func harHeaders(h network.Headers) []map[string]string {
	out := []map[string]string{}
	for k, v := range h {
		out = append(out, map[string]string{"name": k, "value": fmt.Sprint(v)})
	}
	return out
}

// chromiumPath finds a Chromium to drive (STAMPEDE_CHROMIUM overrides).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STAMPEDE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary found on PATH (CI must install Debian's chromium package); set STAMPEDE_CHROMIUM to its path")
	}
	t.Skip("skipping: no chromium binary found on PATH (apt-get install chromium, or set STAMPEDE_CHROMIUM); CI=true makes this a failure")
	return ""
}

// TestConvertChromiumRecording records the voting flow in real Chromium,
// converts the HAR with the binary, and runs the plan against the same
// app: every vote must go through with a token the run itself obtained.
func TestConvertChromiumRecording(t *testing.T) {
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte{0x89, 'P', 'N', 'G'})
	}))
	defer cdn.Close()
	app := &votingApp{demo: demo.New(demo.Options{}), csrf: map[string]bool{}, auth: map[string]bool{}, thirdParty: cdn.URL}
	srv := httptest.NewServer(app)
	defer srv.Close()

	har := recordHAR(t, srv.URL+"/", "vote()")
	if app.votesIn.Load() != 1 || app.refused.Load() != 0 {
		t.Fatalf("the recorded visit did not vote once: %d votes, %d refused", app.votesIn.Load(), app.refused.Load())
	}
	dir := t.TempDir()
	harPath := filepath.Join(dir, "vote.har")
	if err := os.WriteFile(harPath, har, 0o644); err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(dir, "plan.yaml")
	out := e2etest.Stampede(t, 60*time.Second, "", "convert", "har", harPath, "-o", planPath, "--users", "2", "--duration", "3s")
	if out.Code != 0 {
		t.Fatalf("convert: %s", out)
	}
	planText, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(planText)
	t.Logf("convert said:\n%s\nplan:\n%s", out.Stderr, text)
	// Static assets and the other host are left out; every correlation
	// the flow needs is there.
	for _, want := range []string{
		"csrf_token: {regex: '<meta name=\"csrf-token\" content=\"",
		"X-CSRF-Token: '{{ csrf_token }}'",
		"token: {json: token}",
		"Authorization: Bearer {{ token }}",
		"parties_id: {json: parties.2.id}",
		"partyId: '{{ parties_id }}'",
		"voter-id: '{{ uuid }}'",
		"think: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("converted plan lacks %q:\n%s\nconvert said:\n%s", want, text, out.Stderr)
		}
	}
	for _, gone := range []string{"app.js", "style.css", "logo.png", "favicon", "User-Agent", "sec-ch-ua"} {
		if strings.Contains(text, gone) {
			t.Errorf("converted plan still has %q:\n%s", gone, text)
		}
	}
	if !strings.Contains(out.Stderr, "third-party") {
		t.Errorf("convert did not say it left the other host out:\n%s", out.Stderr)
	}

	before := app.votesIn.Load()
	res := filepath.Join(dir, "result.json")
	run := e2etest.Stampede(t, 60*time.Second, "", "run", planPath, "-o", res, "-q")
	if run.Code != 0 {
		t.Fatalf("run: %s\nplan:\n%s", run, text)
	}
	r := e2etest.ReadResult(t, res)
	if r.Totals.Failed != 0 || r.Totals.Requests == 0 {
		t.Fatalf("converted plan: %d requests, %d failed\n%s", r.Totals.Requests, r.Totals.Failed, run)
	}
	t.Logf("run: %d requests, %d iterations, %d failed", r.Totals.Requests, r.Totals.Iterations, r.Totals.Failed)
	var votes int64
	for _, st := range r.Steps {
		if st.Name == "POST /votes" {
			votes = st.Successful
		}
	}
	// Each vote went through on a token issued to the run: the recorded
	// ones had been used up, so none of these passed on a replay.
	if votes == 0 || app.votesIn.Load()-before != votes || app.refused.Load() != 0 {
		t.Fatalf("votes in the result %d, let through by the app %d, refused %d", votes, app.votesIn.Load()-before, app.refused.Load())
	}
	if got := app.demo.Stats().VotesStored; int64(got) != votes+1 {
		t.Errorf("the demo stored %d votes, want %d (one per voter: {{ uuid }} made each fresh)", got, votes+1)
	}

	// The control: the same recording replayed as recorded fails, on the
	// used-up CSRF token first, so the correlation is what made it pass.
	raw := filepath.Join(dir, "raw.yaml")
	if out := e2etest.Stampede(t, 60*time.Second, "", "convert", "har", harPath, "-o", raw, "--no-correlate", "--duration", "1s"); out.Code != 0 {
		t.Fatalf("convert --no-correlate: %s", out)
	}
	rawRes := filepath.Join(dir, "raw.json")
	e2etest.Stampede(t, 60*time.Second, "", "run", raw, "-o", rawRes, "-q")
	if rr := e2etest.ReadResult(t, rawRes); rr.Totals.Failed == 0 || app.refused.Load() == 0 {
		t.Errorf("the uncorrelated replay did not fail: %d failed, %d refused by the app", rr.Totals.Failed, app.refused.Load())
	}
}
