package merge

import (
	"reflect"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// Segments' retry series add up second by second on the merged clock (the
// second segment started a second later), the peak waiting is the largest
// summed second (6, not the sum of the peaks, 7), give-ups and
// Retry-After waits add up, and the hubs add up by URL.
func TestMergeRetriesAndHubs(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := segmentResult(t, 0, 2, t0, func(r *result.Result) {
		r.Connections = &result.Connections{Scenarios: []result.ConnScenario{{
			Scenario: "display", Protocol: "signalr", Attempts: 6, Failed: 6, ByClass: map[string]int64{"rate_limited": 6},
			GaveUp: 1, RetryAfter: 5, PeakWaiting: 4, AttemptsPerS: []int64{5, 1, 0}, WaitingPerS: []int64{3, 4, 1},
			Hubs: []result.HubCount{{URL: "http://a/h", Failed: 3}, {URL: "http://b/h", Failed: 3}},
		}}}
	})
	b := segmentResult(t, 1, 2, t0.Add(time.Second), func(r *result.Result) {
		r.Connections = &result.Connections{Scenarios: []result.ConnScenario{{
			Scenario: "display", Protocol: "signalr", Attempts: 8, Opened: 2, Failed: 6, ByClass: map[string]int64{"rate_limited": 6},
			PeakOpen: 2, OpenAtEnd: 2, GaveUp: 2, RetryAfter: 6, PeakWaiting: 3, AttemptsPerS: []int64{4, 2}, WaitingPerS: []int64{2, 3},
			Hubs: []result.HubCount{{URL: "http://b/h", Opened: 2, Failed: 2, PeakOpen: 2, OpenAtEnd: 2, Pushes: 9}, {URL: "http://a/h", Failed: 4}},
		}}}
	})
	m, err := Results([]*result.Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	cs := m.Connections.Scenarios[0]
	if !reflect.DeepEqual(cs.AttemptsPerS, []int64{5, 5, 2}) || !reflect.DeepEqual(cs.WaitingPerS, []int64{3, 6, 4}) || cs.PeakWaiting != 6 {
		t.Errorf("attempts per second %v, waiting %v, peak %d; want [5 5 2], [3 6 4], 6", cs.AttemptsPerS, cs.WaitingPerS, cs.PeakWaiting)
	}
	if cs.GaveUp != 3 || cs.RetryAfter != 11 || cs.Attempts != 14 {
		t.Errorf("gave up %d, Retry-After waits %d, attempts %d; want 3, 11, 14", cs.GaveUp, cs.RetryAfter, cs.Attempts)
	}
	want := []result.HubCount{{URL: "http://a/h", Failed: 7}, {URL: "http://b/h", Opened: 2, Failed: 5, PeakOpen: 2, OpenAtEnd: 2, Pushes: 9}}
	if !reflect.DeepEqual(cs.Hubs, want) {
		t.Errorf("hubs\n got %+v\nwant %+v", cs.Hubs, want)
	}
}
