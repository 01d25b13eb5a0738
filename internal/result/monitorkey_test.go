package result

import "testing"

func TestSplitMonitorKey(t *testing.T) {
	for key, want := range map[string][2]string{
		"postgres.connections.active":                  {"postgres", "connections.active"},
		"postgres[db.main].connections.active":         {"postgres[db.main]", "connections.active"},
		`prometheus[node].node_cpu{mode="idle"}`:       {"prometheus[node]", `node_cpu{mode="idle"}`},
		`prometheus.http_requests_total{code="5.0.0"}`: {"prometheus", `http_requests_total{code="5.0.0"}`},
		"host[b.json].cpu.busy_pct":                    {"host[b.json]", "cpu.busy_pct"},
		"host":                                         {"host", ""},
	} {
		if l, m := SplitMonitorKey(key); l != want[0] || m != want[1] {
			t.Errorf("SplitMonitorKey(%q) = %q, %q; want %q, %q", key, l, m, want[0], want[1])
		}
	}
}

func TestShifted(t *testing.T) {
	s := MonitorSeries{Unit: "pct", T: []float64{0, 1}, V: []float64{5, 6}}
	got := s.Shifted(-0.5)
	if got.T[0] != -0.5 || got.T[1] != 0.5 || got.V[1] != 6 || got.Unit != "pct" {
		t.Errorf("Shifted = %+v", got)
	}
	if s.T[0] != 0 {
		t.Error("Shifted changed its receiver")
	}
}
