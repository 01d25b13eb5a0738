package dashboard

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The dashboard answers only at the printed URL (its token), only to a
// Host and Origin that name this machine by address, localhost or the name
// --dashboard gave: before, any path-guessing local page or a DNS-rebinding
// page (Host: attacker.example) read the run's report, tokens included.
func TestDashboardGuards(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	s.Sample(snap(3))
	addr, token, _ := strings.Cut(strings.TrimPrefix(s.URL(), "http://"), "/")
	if len(token) < 32 {
		t.Fatalf("URL %s has no token", s.URL())
	}
	_, port, _ := strings.Cut(addr, ":")
	for _, c := range []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/", nil, http.StatusNotFound},
		{"/report", nil, http.StatusNotFound},
		{"/live", nil, http.StatusNotFound},
		{"/events", nil, http.StatusNotFound},
		{"/" + token + "x/report", nil, http.StatusNotFound},
		{"/" + token + "/live", nil, http.StatusOK},
		{"/" + token + "/", nil, http.StatusOK},
		{"/" + token + "/live", map[string]string{"Host": "localhost:" + port}, http.StatusOK},
		{"/" + token + "/live", map[string]string{"Host": "[::1]:" + port}, http.StatusOK},
		{"/" + token + "/live", map[string]string{"Host": "attacker.example:" + port}, http.StatusForbidden},
		{"/" + token + "/report", map[string]string{"Host": "attacker.example"}, http.StatusForbidden},
		{"/" + token + "/live", map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{"/" + token + "/live", map[string]string{"Origin": "http://127.0.0.1:" + port}, http.StatusOK},
	} {
		if got := get(t, "http://"+addr+c.path, c.header); got != c.want {
			t.Errorf("GET %s %v: %d, want %d", c.path, c.header, got, c.want)
		}
	}
}

// At most maxViewers event streams at once; the next is refused instead of
// taking another of the process's files.
func TestDashboardViewersAreBounded(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	s.Sample(snap(3))
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for i := 0; i < maxViewers; i++ {
		r, err := http.Get(s.URL() + "/events")
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("viewer %d: %v %v", i, r, err)
		}
		open = append(open, r)
		// Its first event says the stream is counted.
		if _, err := bufio.NewReader(r.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	r, err := http.Get(s.URL() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("viewer %d: %d, want 503", maxViewers+1, r.StatusCode)
	}
}

// A client that holds /events open but is no page (it never fetches a
// report) does not hold the run's end: Close waited 20 s for it.
func TestListenerWithoutPageDoesNotHoldTheEnd(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.finalWait = time.Hour // the wait, were it taken, would outlast the test
	s.Sample(snap(3))
	r, err := http.Get(s.URL() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if _, err := bufio.NewReader(r.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(snap(4)) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close is waiting for a listener that is no page")
	}
}

// A page that has fetched no report yet (opened in a background tab) but
// says it is one is waited for: it fetches the final report at once.
func TestPageThatSaysSoIsWaitedFor(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.finalWait = time.Hour
	s.Sample(snap(3))
	r, err := http.Get(s.URL() + "/events?page=1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if _, err := bufio.NewReader(r.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(snap(4)) }()
	select {
	case <-closed:
		t.Fatal("Close did not wait for the page's final fetch")
	case <-time.After(100 * time.Millisecond):
	}
	resp, err := http.Get(s.URL() + "/report")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Stampede-Final") != "1" {
		t.Errorf("report after Close: %v", resp.Header)
	}
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
}

// The bare address, which a user types first, says where the page is
// without giving the token away. Before, it was an empty 404.
func TestDashboardRootSaysWhereThePageIs(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	addr, token, _ := strings.Cut(strings.TrimPrefix(s.URL(), "http://"), "/")
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "URL stampede printed") || strings.Contains(string(body), token) {
		t.Errorf("GET /: %d %q", resp.StatusCode, body)
	}
}
