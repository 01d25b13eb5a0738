package dashboard

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

func snap(n int64) *result.Result {
	h := result.NewHistogram()
	for i := int64(0); i < n; i++ {
		h.RecordValue(1000 + i)
	}
	lat := result.LatencyOf(h)
	return &result.Result{Schema: result.Schema, Plan: result.PlanInfo{Name: "d"},
		Run:    result.RunInfo{Started: time.Now(), DurationS: float64(n), Model: "closed"},
		Totals: result.Totals{Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat},
		Steps:  []result.Step{{Scenario: "s", Name: "GET /", Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat}}}
}

// TestEventsAndFinal: a page hears every update while it listens, the last
// one final; the report it then fetches is the final one, and Close waits
// for that fetch.
func TestEventsAndFinal(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := http.Get(s.URL() + "/report"); err != nil || r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("report before any figures: %v %v", r, err)
	}
	s.Sample(snap(10))
	resp, err := http.Get(s.URL() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	if got := <-lines; got != `data: {"seq":1,"final":false}` {
		t.Fatalf("first event %q", got)
	}
	s.Sample(snap(20))
	if got := <-lines; got != `data: {"seq":2,"final":false}` {
		t.Fatalf("second event %q", got)
	}
	// A page fetches the report at each update: that is what makes it a
	// page the run's end waits for (guard_test.go has a client that only
	// listens).
	if r, err := http.Get(s.URL() + "/report"); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("report: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(snap(30)) }()
	if got := <-lines; got != `data: {"seq":3,"final":true}` {
		t.Fatalf("final event %q", got)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the watching page fetched the final report")
	case <-time.After(100 * time.Millisecond):
	}
	r, err := http.Get(s.URL() + "/report")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.Header.Get("X-Stampede-Final") != "1" || r.Header.Get("X-Stampede-Seq") != "3" || !strings.Contains(string(body), "<html") {
		t.Errorf("final report: %v", r.Header)
	}
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
	if _, ok := <-lines; ok {
		t.Error("the event stream did not end after the final event")
	}
}

func TestPortInUse(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	addr, _, _ := strings.Cut(strings.TrimPrefix(s.URL(), "http://"), "/")
	if _, err := New(addr); err == nil || !strings.Contains(err.Error(), "--dashboard") {
		t.Errorf("second listener on the same port: %v", err)
	}
}
