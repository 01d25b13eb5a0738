package dashboard

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/profile"
	"github.com/stampede-load/stampede/internal/result"
)

// Profile is the load a test plans, drawn ahead of the actual one: a
// polyline of (T seconds from the start, V users or iterations/s), over
// the whole planned duration.
type Profile struct {
	// Vary is what V counts: "users", "rate" or "tenants".
	Vary string    `json:"vary"`
	T    []float64 `json:"t"`
	V    []float64 `json:"v"`
	// Levels are a gates or sweep run's planned levels, in order; empty
	// for a single run and for a capacity search, whose levels are found
	// as it goes.
	Levels []float64 `json:"levels,omitempty"`
}

// StagesProfile is a run's planned profile, from its plan's model and
// stages: users in the closed model, arrivals/s in the open one. A step
// ramp is drawn as its stairs, since that is the load the run applies.
func StagesProfile(model profile.Model, stages []profile.Stage) Profile {
	p := Profile{Vary: profile.VaryUsers, T: []float64{}, V: []float64{}}
	if model == profile.Open {
		p.Vary = profile.VaryRate
	}
	at := time.Duration(0)
	add := func(t time.Duration, v float64) {
		p.T = append(p.T, t.Seconds())
		p.V = append(p.V, v)
	}
	for _, s := range stages {
		switch {
		case s.Steps > 0 && s.From != s.To:
			for k := 0; k < s.Steps; k++ {
				v := s.From + (s.To-s.From)*float64(k+1)/float64(s.Steps)
				add(at+s.Duration*time.Duration(k)/time.Duration(s.Steps), v)
				add(at+s.Duration*time.Duration(k+1)/time.Duration(s.Steps), v)
			}
		default:
			add(at, s.From)
			add(at+s.Duration, s.To)
		}
		at += s.Duration
	}
	return p
}

// LevelsProfile is a gates or sweep run's planned profile: each level in
// turn, ramped from zero over ramp and held for hold.
func LevelsProfile(vary string, values []float64, ramp, hold time.Duration) Profile {
	p := Profile{Vary: vary, T: []float64{}, V: []float64{}, Levels: append([]float64{}, values...)}
	at := 0.0
	for _, v := range values {
		if ramp > 0 {
			p.T, p.V = append(p.T, at), append(p.V, 0)
			at += ramp.Seconds()
		}
		p.T, p.V = append(p.T, at, at+hold.Seconds()), append(p.V, v, v)
		at += hold.Seconds()
	}
	return p
}

// SetProfile gives the pages the planned profile; set it before the run
// starts so the first update already draws it.
func (s *Sink) SetProfile(p Profile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profile = &p
}

// live is what the page draws above the report: the planned profile and
// the actual one, the level running, the indicators fired so far.
type live struct {
	Seq        int                `json:"seq"`
	Final      bool               `json:"final"`
	Planned    *Profile           `json:"planned"`
	Actual     series             `json:"actual"`
	Levels     []liveLevel        `json:"levels"`
	Current    int                `json:"current"` // index into Levels of the one running; -1: none
	Indicators []result.Indicator `json:"indicators"`
}

type series struct {
	T []float64 `json:"t"`
	V []float64 `json:"v"`
}

type liveLevel struct {
	Vary  string  `json:"vary"`
	Value float64 `json:"value"`
	// State is "running", "pass" or "fail".
	State string `json:"state"`
}

// actual is what the run applied, per interval, in the profile's unit:
// active users, or iterations started per second.
func actual(r *result.Result, vary string, offset float64, into *series) float64 {
	sr := r.Series
	iv := sr.IntervalS
	if iv <= 0 {
		iv = 1
	}
	end := offset
	for i, t := range sr.T {
		var v float64
		switch {
		case vary == profile.VaryRate && i < len(sr.Started):
			v = float64(sr.Started[i]) / iv
		case vary != profile.VaryRate && i < len(sr.Active):
			v = float64(sr.Active[i])
		default:
			continue
		}
		into.T = append(into.T, offset+t)
		into.V = append(into.V, v)
		end = offset + t + iv
	}
	return end
}

func (s *Sink) liveState() *live {
	s.mu.Lock()
	cur, seq, final, prof := s.cur, s.seq, s.final, s.profile
	s.mu.Unlock()
	l := &live{Seq: seq, Final: final, Planned: prof, Current: -1,
		Actual: series{T: []float64{}, V: []float64{}}, Levels: []liveLevel{}, Indicators: []result.Indicator{}}
	if cur == nil {
		return l
	}
	vary := profile.VaryUsers
	if prof != nil {
		vary = prof.Vary
	} else if cur.Run.Model == "open" {
		vary = profile.VaryRate
	}
	if len(cur.Levels) == 0 {
		actual(cur, vary, 0, &l.Actual)
	} else {
		// Levels run one after another: their series are laid end to end.
		at := 0.0
		for i, lv := range cur.Levels {
			running := !final && i == len(cur.Levels)-1 && lv.Result != nil && lv.Result.Run.Partial
			st := levelState(lv, running)
			if st == "running" {
				l.Current = i
			}
			l.Levels = append(l.Levels, liveLevel{Vary: lv.Vary, Value: lv.Value, State: st})
			if lv.Result != nil {
				at = actual(lv.Result, vary, at, &l.Actual)
			}
		}
	}
	switch {
	case len(cur.Indicators) > 0:
		l.Indicators = cur.Indicators
	case !final:
		// A snapshot is not judged yet: the indicators that fire on the
		// run so far are the ones the final result would show if it ended
		// now.
		// A run still going is partial by nature, which the page says
		// already.
		for _, in := range gate.Indicators(cur) {
			if in.ID != "partial" {
				l.Indicators = append(l.Indicators, in)
			}
		}
	}
	return l
}

func (s *Sink) liveJSON(w http.ResponseWriter, r *http.Request) {
	l := s.liveState()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Stampede-Seq", strconv.Itoa(l.Seq))
	_ = json.NewEncoder(w).Encode(l)
}

// levelState is a level's square on the page: a level that met its
// criteria on a generator that lagged is suspect, as the tables say, not
// a pass.
func levelState(lv result.Level, running bool) string {
	switch {
	case lv.Pass && lv.Suspect != "":
		return "suspect"
	case lv.Pass:
		return "pass"
	case running:
		return "running"
	}
	return "fail"
}
