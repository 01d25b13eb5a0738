package dashboard

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/profile"
	"github.com/stampede-load/stampede/internal/result"
)

// TestStagesProfile: the planned profile spans every stage, a step ramp as
// its stairs, in the model's unit.
func TestStagesProfile(t *testing.T) {
	p := StagesProfile(profile.Open, []profile.Stage{
		{Duration: 10 * time.Second, From: 0, To: 100},
		{Duration: 20 * time.Second, From: 100, To: 300, Steps: 2},
		{Duration: 5 * time.Second, From: 300, To: 300},
	})
	if p.Vary != profile.VaryRate {
		t.Errorf("vary %q", p.Vary)
	}
	wantT := []float64{0, 10, 10, 20, 20, 30, 30, 35}
	wantV := []float64{0, 100, 200, 200, 300, 300, 300, 300}
	if len(p.T) != len(wantT) || len(p.V) != len(wantV) {
		t.Fatalf("profile %v %v", p.T, p.V)
	}
	for i := range wantT {
		if p.T[i] != wantT[i] || p.V[i] != wantV[i] {
			t.Errorf("point %d: (%g, %g), want (%g, %g)", i, p.T[i], p.V[i], wantT[i], wantV[i])
		}
	}
	if c := StagesProfile(profile.Closed, nil); c.Vary != profile.VaryUsers || len(c.T) != 0 {
		t.Errorf("closed, no stages: %+v", c)
	}
}

// TestLevelsProfile: each level ramps from zero then holds, one after
// another, and the planned levels are listed.
func TestLevelsProfile(t *testing.T) {
	p := LevelsProfile(profile.VaryUsers, []float64{10, 20}, 2*time.Second, 5*time.Second)
	wantT := []float64{0, 2, 7, 7, 9, 14}
	wantV := []float64{0, 10, 10, 0, 20, 20}
	for i := range wantT {
		if i >= len(p.T) || p.T[i] != wantT[i] || p.V[i] != wantV[i] {
			t.Fatalf("profile %v %v, want %v %v", p.T, p.V, wantT, wantV)
		}
	}
	if len(p.Levels) != 2 || p.Levels[1] != 20 {
		t.Errorf("levels %v", p.Levels)
	}
}

// TestLiveLevels: /live shows the planned profile from before any figure,
// then the levels that ended with their verdicts, the one running, their
// series end to end, and the indicators the run so far fires.
func TestLiveLevels(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	s.SetProfile(LevelsProfile(profile.VaryUsers, []float64{10, 20, 30}, 0, 2*time.Second))
	get := func() live {
		t.Helper()
		resp, err := http.Get(s.URL() + "/live")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l live
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := get(); l.Planned == nil || len(l.Planned.Levels) != 3 || l.Current != -1 || len(l.Actual.T) != 0 {
		t.Fatalf("before any figures: %+v", l)
	}
	lvRes := func(active int64, partial bool) *result.Result {
		r := snap(100)
		r.Series = result.Series{IntervalS: 1, T: []float64{0, 1}, Active: []int64{active, active}, Started: []int64{5, 5}}
		r.Run.Partial = partial
		return r
	}
	top := snap(200)
	top.Run.Partial = true
	// Every request failed: the overload indicator fires on the snapshot.
	top.Totals.Successful = 0
	top.Levels = []result.Level{
		{Vary: profile.VaryUsers, Value: 10, Pass: true, Result: lvRes(10, false)},
		{Vary: profile.VaryUsers, Value: 20, Result: lvRes(20, true)},
	}
	s.Sample(top)
	l := get()
	if len(l.Levels) != 2 || l.Levels[0].State != "pass" || l.Levels[1].State != "running" || l.Current != 1 {
		t.Errorf("levels %+v current %d", l.Levels, l.Current)
	}
	if want := []float64{0, 1, 2, 3}; len(l.Actual.T) != 4 || l.Actual.T[2] != want[2] || l.Actual.V[0] != 10 || l.Actual.V[3] != 20 {
		t.Errorf("actual %+v", l.Actual)
	}
	found := false
	for _, in := range l.Indicators {
		found = found || in.ID == "overloaded"
		if in.ID == "partial" {
			t.Errorf("a live run's snapshot flagged as partial: %+v", in)
		}
	}
	if !found {
		t.Errorf("indicators of the run so far: %+v", l.Indicators)
	}
}

// TestRenderBudget: once a report took long to render, the updates that
// follow within its budget are folded into the next one the page hears
// of, and the final report is announced at once whatever the budget.
func TestRenderBudget(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
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
	fetch := func() {
		r, err := http.Get(s.URL() + "/report")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	fetch()
	// As if that render had taken a minute: the next 200 minutes are its.
	s.mu.Lock()
	s.renderTook = time.Minute
	s.mu.Unlock()
	s.Sample(snap(20))
	s.Sample(snap(30))
	closed := make(chan error, 1)
	go func() { closed <- s.Close(snap(40)) }()
	if got := <-lines; got != `data: {"seq":4,"final":true}` {
		t.Fatalf("event after a slow render %q, want the final one (updates 2 and 3 folded into it)", got)
	}
	fetch()
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
}

// A level that met its criteria while the generator lagged is suspect on
// the page as in the tables; before, its square read pass.
func TestLevelStateSuspect(t *testing.T) {
	for _, c := range []struct {
		lv      result.Level
		running bool
		want    string
	}{
		{result.Level{Pass: true}, false, "pass"},
		{result.Level{Pass: true, Suspect: "lag"}, false, "suspect"},
		{result.Level{Suspect: "lag"}, false, "fail"},
		{result.Level{}, true, "running"},
		{result.Level{}, false, "fail"},
	} {
		if got := levelState(c.lv, c.running); got != c.want {
			t.Errorf("level %+v running %v: %q, want %q", c.lv, c.running, got, c.want)
		}
	}
}
