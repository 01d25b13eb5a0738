package merge

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

func segmentResult(t *testing.T, idx, count int, start time.Time, mod func(*result.Result)) *result.Result {
	t.Helper()
	return resultOf(t, nil, func(r *result.Result) {
		r.Run.Started = start
		r.Run.Segment = result.Segment{Index: idx, Count: count}
		if mod != nil {
			mod(r)
		}
	})
}

func TestMergeConnections(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(idx int, display, waiter result.ConnScenario, open []int64) *result.Result {
		return segmentResult(t, idx, 2, t0, func(r *result.Result) {
			r.Connections = &result.Connections{Scenarios: []result.ConnScenario{display, waiter}}
			n := len(open)
			ts := make([]float64, n)
			for i := range ts {
				ts[i] = float64(i)
			}
			r.Series = result.Series{IntervalS: 1, T: ts, Started: make([]int64, n), Completed: make([]int64, n), OK: make([]int64, n),
				P50US: make([]int64, n), P95US: make([]int64, n), P99US: make([]int64, n), Active: make([]int64, n),
				InFlight: make([]int64, n), Dropped: make([]int64, n), LagP99US: make([]int64, n), Target: make([]float64, n),
				Failed: map[string][]int64{}, Connections: open}
		})
	}
	a := mk(0,
		result.ConnScenario{Scenario: "display", Protocol: "signalr", Target: 5, Attempts: 6, Opened: 5, Failed: 1,
			ByClass: map[string]int64{"conn_refused": 1}, PeakOpen: 5, OpenAtEnd: 5,
			Disconnects: map[string]int64{"client_close": 5}, Pushes: map[string]int64{"OrderPlaced": 7},
			MessagesIn: 20, MessagesOut: 10, BytesIn: 2000, BytesOut: 500},
		result.ConnScenario{Scenario: "waiter", Protocol: "websocket", Target: 2, Attempts: 2, Opened: 2, ByClass: map[string]int64{}, PeakOpen: 2},
		[]int64{3, 7, 7})
	b := mk(1,
		result.ConnScenario{Scenario: "display", Protocol: "signalr", Target: 4, Attempts: 4, Opened: 4, ByClass: map[string]int64{},
			PeakOpen: 4, OpenAtEnd: 3, Disconnects: map[string]int64{"client_close": 3, "server_close": 1},
			Pushes: map[string]int64{"OrderPlaced": 5, "MenuChanged": 1}, OtherPushes: 2,
			MessagesIn: 12, MessagesOut: 8, BytesIn: 1200, BytesOut: 400},
		result.ConnScenario{Scenario: "waiter", Protocol: "websocket", Target: 1, Attempts: 3, Opened: 1, Failed: 2,
			ByClass: map[string]int64{"timeout": 2}, PeakOpen: 1},
		[]int64{2, 5})
	m, err := Results([]*result.Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []result.ConnScenario{
		{Scenario: "display", Protocol: "signalr", Target: 9, Attempts: 10, Opened: 9, Failed: 1,
			ByClass: map[string]int64{"conn_refused": 1}, PeakOpen: 9, OpenAtEnd: 8,
			Disconnects: map[string]int64{"client_close": 8, "server_close": 1},
			Pushes:      map[string]int64{"OrderPlaced": 12, "MenuChanged": 1}, OtherPushes: 2,
			MessagesIn: 32, MessagesOut: 18, BytesIn: 3200, BytesOut: 900},
		{Scenario: "waiter", Protocol: "websocket", Target: 3, Attempts: 5, Opened: 3, Failed: 2,
			ByClass: map[string]int64{"timeout": 2}, PeakOpen: 3},
	}
	if m.Connections == nil || !reflect.DeepEqual(m.Connections.Scenarios, want) {
		t.Errorf("connections:\n got %+v\nwant %+v", m.Connections, want)
	}
	if got := m.Series.Connections; !reflect.DeepEqual(got, []int64{5, 12, 7}) {
		t.Errorf("series connections = %v, want [5 12 7]", got)
	}

	// The merged result survives a write and a validated read.
	path := filepath.Join(t.TempDir(), "merged.json")
	if err := result.Write(path, m); err != nil {
		t.Fatal(err)
	}
	back, err := result.Read(path)
	if err != nil {
		t.Fatalf("merged result does not read back: %v", err)
	}
	if !reflect.DeepEqual(back.Connections, m.Connections) || !reflect.DeepEqual(back.Series.Connections, m.Series.Connections) {
		t.Errorf("connections changed on the way through the file")
	}

	// Without any connections in the inputs, the merge has none either.
	plain, err := Results([]*result.Result{segmentResult(t, 0, 2, t0, nil), segmentResult(t, 1, 2, t0, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Connections != nil || plain.Series.Connections != nil {
		t.Errorf("no connections in, got %+v / %v", plain.Connections, plain.Series.Connections)
	}
}

func TestMergeMonitors(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ser := func(unit string, t0 float64, v ...float64) result.MonitorSeries {
		s := result.MonitorSeries{Unit: unit}
		for i, x := range v {
			s.T = append(s.T, t0+float64(i))
			s.V = append(s.V, x)
		}
		return s
	}
	// Segment 0 watches the database and records itself; segment 1 only
	// itself, started 0.5 s later, its samples 0.3 s after segment 0's.
	a := segmentResult(t, 0, 2, t0, func(r *result.Result) {
		r.Monitors = map[string]result.MonitorSeries{
			"postgres.connections.active": ser("count", -1, 1, 2, 3, 4),
			"process[self].rss_bytes":     ser("bytes", -1, 100, 110, 120, 130),
		}
		r.MonitorProblems = []result.MonitorProblem{{Monitor: "redis", Severity: "warn", Message: "refused", T: 2}}
	})
	b := segmentResult(t, 1, 2, t0.Add(500*time.Millisecond), func(r *result.Result) {
		r.Monitors = map[string]result.MonitorSeries{
			"process[self].rss_bytes": ser("bytes", -0.2, 50, 60, 70),
		}
	})
	m, err := Results([]*result.Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Monitors["postgres.connections.active"]; !reflect.DeepEqual(got, ser("count", -1, 1, 2, 3, 4)) {
		t.Errorf("postgres series moved or changed: %+v", got)
	}
	// b's samples land at 0.3, 1.3, 2.3 on the merged clock, a's at -1..2:
	// the sum starts where both have sampled (0.3 is in a's slot 0) and
	// pairs each of b's samples with a's in the same slot.
	self := m.Monitors["process[self].rss_bytes"]
	wantT := []float64{0, 1, 2}
	wantV := []float64{110 + 50, 120 + 60, 130 + 70}
	if !reflect.DeepEqual(self.T, wantT) || !reflect.DeepEqual(self.V, wantV) || self.Unit != "bytes" {
		t.Errorf("process[self] = %+v, want t %v v %v", self, wantT, wantV)
	}
	if len(m.MonitorProblems) != 1 || m.MonitorProblems[0].Monitor != "redis" {
		t.Errorf("problems = %+v", m.MonitorProblems)
	}

	// Whole runs merged, each watching its own host: both kept, named.
	w1 := resultOf(t, nil, func(r *result.Result) {
		r.Monitors = map[string]result.MonitorSeries{"host.cpu.busy_pct": ser("pct", 0, 10, 20)}
	})
	w2 := resultOf(t, nil, func(r *result.Result) {
		r.Monitors = map[string]result.MonitorSeries{"host.cpu.busy_pct": ser("pct", 0, 30, 40),
			"postgres[main].commits": ser("1/s", 0, 5)}
	})
	m, err = Options{Names: []string{"a.json", "b.json"}}.Results([]*result.Result{w1, w2})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host[a.json].cpu.busy_pct", "host[b.json].cpu.busy_pct", "postgres[main].commits"} {
		if _, ok := m.Monitors[k]; !ok {
			t.Errorf("missing %s in %v", k, keys(m.Monitors))
		}
	}
	if got := (Options{}).qualify("postgres[db.main].x.y", 1, segmentResult(t, 1, 3, t0, nil)); got != "postgres[db.main, segment 2].x.y" {
		t.Errorf("qualify = %q", got)
	}
}

func TestSumSeriesNaN(t *testing.T) {
	s := sumSeries([]result.MonitorSeries{
		{Unit: "pct", T: []float64{0, 1, 2}, V: []float64{1, math.NaN(), 3}},
		{Unit: "pct", T: []float64{0, 1, 2}, V: []float64{10, 20, 30}},
	})
	if !reflect.DeepEqual(s.V, []float64{11, 21, 33}) {
		t.Errorf("a missing value holds the one before it: %v", s.V)
	}
}

func keys(m map[string]result.MonitorSeries) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestMergeGeneratorCores(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	gen := func(idx int, host string) *result.Result {
		return segmentResult(t, idx, 3, t0, func(r *result.Result) {
			r.Generator = result.Generator{CPUSeconds: 4, Cores: 2, Host: host}
		})
	}
	for _, c := range []struct {
		hosts     []string
		cores     int
		util      float64
		mergeHost string
	}{
		{[]string{"box", "box", "box"}, 2, 12.0 / (10 * 2), "box"},    // --workers 3 on one 2-core machine
		{[]string{"pod-a", "pod-b", "pod-c"}, 6, 12.0 / (10 * 6), ""}, // three pods
		{[]string{"", "", "box"}, 6, 12.0 / (10 * 6), ""},             // older files: no host, each counts
	} {
		m, err := Results([]*result.Result{gen(0, c.hosts[0]), gen(1, c.hosts[1]), gen(2, c.hosts[2])})
		if err != nil {
			t.Fatal(err)
		}
		g := m.Generator
		if g.Cores != c.cores || math.Abs(g.CPUUtil-c.util) > 1e-9 || g.Host != c.mergeHost || g.CPUSeconds != 12 {
			t.Errorf("hosts %q: cores %d util %.3f host %q cpu %g, want %d %.3f %q 12", c.hosts, g.Cores, g.CPUUtil, g.Host, g.CPUSeconds, c.cores, c.util, c.mergeHost)
		}
	}
}

// Repeated runs on one machine an hour apart: its cores were there for
// the three runs' time, not once for the longest.
func TestMergeGeneratorCoresSequential(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var rs []*result.Result
	for i := range 3 {
		rs = append(rs, resultOf(t, nil, func(r *result.Result) {
			r.Run.Started = t0.Add(time.Duration(i) * time.Hour)
			r.Run.DurationS = 10
			r.Generator = result.Generator{CPUSeconds: 16, Cores: 2, Host: "box"}
		}))
	}
	// A fourth overlapping the first by half counts its other half only.
	rs = append(rs, resultOf(t, nil, func(r *result.Result) {
		r.Run.Started = t0.Add(5 * time.Second)
		r.Run.DurationS = 10
		r.Generator = result.Generator{CPUSeconds: 2, Cores: 2, Host: "box"}
	}))
	m, err := Results(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := 50.0 / ((10 + 10 + 10 + 5) * 2)
	if g := m.Generator; g.Cores != 2 || math.Abs(g.CPUUtil-want) > 1e-9 {
		t.Errorf("cores %d util %.4f, want 2 and %.4f", g.Cores, g.CPUUtil, want)
	}
}

// One late sample must not make the summed series' grid finer.
func TestSumSeriesLateSample(t *testing.T) {
	a := result.MonitorSeries{Unit: "bytes"}
	for i := range 100 {
		a.T = append(a.T, float64(i))
		a.V = append(a.V, 10)
	}
	a.T[50] += 0.9 // a sample taken late
	b := result.MonitorSeries{Unit: "bytes", T: append([]float64(nil), a.T...), V: append([]float64(nil), a.V...)}
	s := sumSeries([]result.MonitorSeries{a, b})
	if len(s.T) > 101 {
		t.Errorf("%d points from two series of 100", len(s.T))
	}
	for i, v := range s.V {
		if v != 20 {
			t.Fatalf("point %d (t=%g) = %g, want 20", i, s.T[i], v)
		}
	}
}

// Problems of a monitor several whole runs had are named by input, like
// its series.
func TestMergeMonitorProblemsNamed(t *testing.T) {
	mk := func(msg string) *result.Result {
		return resultOf(t, nil, func(r *result.Result) {
			r.Monitors = map[string]result.MonitorSeries{"host.load1": {Unit: "count", T: []float64{0}, V: []float64{1}}}
			r.MonitorProblems = []result.MonitorProblem{
				{Monitor: "host", Severity: "warn", Message: msg, T: 1},
				{Monitor: "redis", Severity: "warn", Message: "refused", T: 2},
			}
		})
	}
	m, err := Options{Names: []string{"a.json", "b.json"}}.Results([]*result.Result{mk("slow a"), mk("slow b")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range m.MonitorProblems {
		got[p.Monitor+" "+p.Message] = p.Message
	}
	for _, want := range []string{"host[a.json] slow a", "host[b.json] slow b", "redis[a.json] refused", "redis[b.json] refused"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing problem %q in %v", want, got)
		}
	}
}
