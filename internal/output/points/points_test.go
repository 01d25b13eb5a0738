package points

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// TestRunLabelsOnEveryPoint: testid, segment and the user's labels are on
// every point, so no two writers' series are one.
func TestRunLabelsOnEveryPoint(t *testing.T) {
	r := &result.Result{Plan: result.PlanInfo{Name: "p"}, Run: result.RunInfo{Started: time.Now().Add(-time.Second)}}
	r.Steps = []result.Step{{Scenario: "s", Name: "GET /", Requests: 3, Failed: 1, ByClass: map[string]int64{"timeout": 1}}}
	r.Series = result.Series{IntervalS: 1, T: []float64{0}, Active: []int64{2}, Target: []float64{2}}
	b := From(r, time.Now(), Run{TestID: "t1", Segment: "1/2", Labels: []Label{{"env", "ci"}}})
	if len(b.Points) < 5 {
		t.Fatalf("%d points", len(b.Points))
	}
	for _, p := range b.Points {
		got := map[string]string{}
		for _, l := range p.Labels {
			if _, dup := got[l.Name]; dup {
				t.Errorf("%s: label %s twice", p.Metric.Prom, l.Name)
			}
			got[l.Name] = l.Value
		}
		if got["testid"] != "t1" || got["segment"] != "1/2" || got["env"] != "ci" || got["plan"] != "p" {
			t.Errorf("%s labels %v", p.Metric.Prom, got)
		}
	}
}

func TestParseLabel(t *testing.T) {
	if l, err := ParseLabel("env=staging=blue"); err != nil || l != (Label{"env", "staging=blue"}) {
		t.Errorf("env=staging=blue: %v %v", l, err)
	}
	for in, want := range map[string]string{
		"env": "NAME=VALUE", "env=": "NAME=VALUE", "9x=1": "not a Prometheus label name", "a-b=1": "not a Prometheus label name",
		"__x=1": "not a Prometheus label name", "testid=x": "sets testid itself", "le=1": "sets le itself",
	} {
		if _, err := ParseLabel(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
