package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// The summary shows how many slots waited to retry at the peak, those
// that gave up, and each hub of a scenario spread over several.
func TestConnectionsShowRetriesAndHubs(t *testing.T) {
	r := &result.Result{Connections: &result.Connections{Scenarios: []result.ConnScenario{{
		Scenario: "kds", Protocol: "signalr", Attempts: 9, Opened: 4, Failed: 5,
		ByClass:     map[string]int64{"rate_limited": 5},
		PeakWaiting: 3, GaveUp: 1, RetryAfter: 4,
		Hubs: []result.HubCount{
			{URL: "http://a/hubs/k", Opened: 3, Failed: 1, PeakOpen: 3, OpenAtEnd: 2, Pushes: 17},
			{URL: "http://b/hubs/k", Opened: 1, Failed: 4, PeakOpen: 1, OpenAtEnd: 1},
		},
	}}}}
	var b bytes.Buffer
	connections(&b, r)
	for _, want := range []string{
		"Retries: peak 3 waiting to retry at once, 1 gave up, 4 waits lengthened by Retry-After",
		"Hub http://a/hubs/k: 3 opened, 1 failed; peak 3 open, 2 open at the end; 17 pushes",
		"Hub http://b/hubs/k: 1 opened, 4 failed; peak 1 open, 1 open at the end; 0 pushes",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
