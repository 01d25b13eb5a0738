// Package dashboard serves a live view of a run: the HTML report of the
// run so far, redrawn at every interval the run's pump hands over, pushed
// to the page by Server-Sent Events; when the run ends the page holds the
// final report, which it can save. Everything is embedded (the report's
// own assets), so it works with no network beyond the loopback.
package dashboard

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/stampede-load/stampede/internal/result"
)

//go:embed page.html
var page []byte

// renderShare bounds the report's rendering to 1/renderShare of one core's
// time (0.5 %) whatever the run's length, which keeps a page's cost under
// 2 % of what a generator at 20,000 req/s spends (docs/benchmarks.md).
// Updates that come faster are folded into the next one the pages hear
// of: a render of up to 5 ms still redraws every second.
const renderShare = 200

// DefaultAddr is where --dashboard serves without an address: loopback,
// k6's dashboard port.
const DefaultAddr = "127.0.0.1:5665"

// Sink is the dashboard output.
type Sink struct {
	url string
	srv *http.Server

	mu      sync.Mutex
	cur     *result.Result
	seq     int
	final   bool
	changed chan struct{} // closed and replaced at each update
	// The report of cur, rendered when a page asks for it (never when
	// nobody watches), for seq htmlSeq.
	html    []byte
	htmlSeq int
	// inflight is the render under way, which pages asking for its
	// update wait for (render.go).
	inflight *rendering
	// renderedAt and renderTook (its CPU time) are the last render's: the
	// pages hear of a new update no sooner than renderShare renders' time
	// after it, so a long run's report, slower to draw, costs the
	// generator no more.
	renderedAt time.Time
	renderTook time.Duration
	clients    int
	// pages are the event streams of pages (?page=1, page.html); pageSeen:
	// a report was fetched, so a page is what watches.
	pages    int
	pageSeen bool
	// profile is the planned load, drawn ahead of the actual one.
	profile *Profile
	// gotFinal is closed once a page has fetched the final report, which
	// Close waits finalWait for at most.
	gotFinal  chan struct{}
	finalWait time.Duration
	done      chan struct{}
}

// New listens on addr now, so a port in use fails before any load.
func New(addr string) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--dashboard: %v", err)
	}
	root := "/" + newToken() // guard.go
	s := &Sink{url: "http://" + ln.Addr().String() + root, finalWait: finalFetchWait, changed: make(chan struct{}), gotFinal: make(chan struct{}), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+root+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(page)
	})
	mux.Handle("GET "+root, http.RedirectHandler(root+"/", http.StatusFound))
	mux.HandleFunc("GET "+root+"/events", s.events)
	mux.HandleFunc("GET "+root+"/report", s.report)
	mux.HandleFunc("GET "+root+"/live", s.liveJSON)
	// Anything else, the bare address a user types first included: a 404
	// that says where the page is, without the token it guards.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "stampede dashboard: the page is at the URL stampede printed on its stderr (\"dashboard: http://…/TOKEN\"); the token in it is the only way in", http.StatusNotFound)
	})
	s.srv = &http.Server{Handler: newHostGuard(addr, mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	// Serve ends with ErrServerClosed when Close shuts the server.
	go func() { _ = s.srv.Serve(netutil.LimitListener(ln, maxConns)) }()
	return s, nil
}

// URL is where the page is, with the run's token: the only way in.
func (s *Sink) URL() string { return s.url }

// Name implements output.Sink.
func (s *Sink) Name() string { return "dashboard=" + s.url }

// Sample implements output.Sink: it keeps the snapshot and tells the
// pages; rendering waits until one asks.
func (s *Sink) Sample(r *result.Result) {
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final {
		return
	}
	s.cur = r
	s.bump()
}

func (s *Sink) bump() {
	s.seq++
	close(s.changed)
	s.changed = make(chan struct{})
}

// finalFetchWait bounds how long a run's end waits for a watching page to
// fetch the final report.
const finalFetchWait = 20 * time.Second

// Close implements output.Sink: the final report goes to the pages
// watching, which get a moment to fetch it before the server stops.
func (s *Sink) Close(final *result.Result) error {
	s.mu.Lock()
	if final != nil {
		s.cur = final
	}
	s.final = true
	s.bump()
	// Only a page is waited for: one whose event stream says it is one
	// (page.html), or that has fetched a report. A client that only holds
	// /events open (curl, a stuck proxy) never fetches the final report
	// and must not hold the run's exit.
	watching := s.cur != nil && (s.pages > 0 || s.clients > 0 && s.pageSeen)
	s.mu.Unlock()
	if watching {
		// Long enough for a page on a machine the run itself kept busy:
		// 5 s was not (a Chromium page on two saturated cores fetched the
		// final report after the server had stopped). The wait ends as
		// soon as a page has it.
		select {
		case <-s.gotFinal:
		case <-time.After(s.finalWait):
		}
	}
	close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (s *Sink) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	s.mu.Lock()
	if s.clients >= maxViewers {
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("stampede dashboard: %d pages watch already; close one", maxViewers), http.StatusServiceUnavailable)
		return
	}
	page := r.URL.Query().Get("page") != ""
	s.clients++
	if page {
		s.pages++
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.clients--
		if page {
			s.pages--
		}
		s.mu.Unlock()
	}()
	sent := -1
	for {
		s.mu.Lock()
		seq, final, changed, have := s.seq, s.final, s.changed, s.cur != nil
		s.mu.Unlock()
		if seq != sent && have {
			fmt.Fprintf(w, "event: update\ndata: {\"seq\":%d,\"final\":%t}\n\n", seq, final)
			fl.Flush()
			sent = seq
		}
		if final {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
		if !s.waitRenderBudget(r.Context()) {
			return
		}
	}
}

// waitRenderBudget holds a page's next update until the last render's
// share of time is spent (at once for the final report); false when the
// page or the server went away.
func (s *Sink) waitRenderBudget(ctx context.Context) bool {
	for {
		s.mu.Lock()
		due := s.renderedAt.Add(renderShare * s.renderTook)
		final, changed := s.final, s.changed
		s.mu.Unlock()
		wait := time.Until(due)
		if final || wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return true
		case <-changed:
			// The final report may have come: look again.
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return false
		case <-s.done:
			t.Stop()
			return false
		}
	}
}

func (s *Sink) report(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cur, seq, final, html, htmlSeq := s.cur, s.seq, s.final, s.html, s.htmlSeq
	s.mu.Unlock()
	if cur == nil {
		http.Error(w, "no figures yet", http.StatusServiceUnavailable)
		return
	}
	if html == nil || htmlSeq != seq {
		var err error
		if html, err = s.render(r.Context(), cur, seq); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		htmlSeq = seq
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Stampede-Seq", strconv.Itoa(htmlSeq))
	if final {
		h.Set("X-Stampede-Final", "1")
	}
	s.mu.Lock()
	s.pageSeen = true
	s.mu.Unlock()
	_, _ = w.Write(html)
	if final {
		s.mu.Lock()
		select {
		case <-s.gotFinal:
		default:
			close(s.gotFinal)
		}
		s.mu.Unlock()
	}
}
