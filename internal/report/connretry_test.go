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
	r := retriesAndHubs()
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

// retriesAndHubs is a result whose one SignalR scenario waited to retry
// and was spread over two hubs.
func retriesAndHubs() *result.Result {
	return &result.Result{Connections: &result.Connections{Scenarios: []result.ConnScenario{{
		Scenario: "kds", Protocol: "signalr", Attempts: 9, Opened: 4, Failed: 5,
		ByClass:     map[string]int64{"rate_limited": 5},
		PeakWaiting: 3, GaveUp: 1, RetryAfter: 4,
		Hubs: []result.HubCount{
			{URL: "http://a/hubs/k", Opened: 3, Failed: 1, PeakOpen: 3, OpenAtEnd: 2, Pushes: 17},
			{URL: "http://b/hubs/k", Opened: 1, Failed: 4, PeakOpen: 1, OpenAtEnd: 1},
		},
	}}}}
}

// The Markdown and HTML reports show the same retries and hubs as the
// summary, figure for figure. Before, only the summary had them.
func TestReportsShowRetriesAndHubs(t *testing.T) {
	r := retriesAndHubs()
	var mdb bytes.Buffer
	if err := Markdown(&mdb, r); err != nil {
		t.Fatal(err)
	}
	md := mdb.String()
	var page bytes.Buffer
	if err := HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ report, got, want string }{
		{"markdown", md, "| peak 3 waiting to retry at once, 1 gave up, 4 waits lengthened by Retry-After |"},
		{"markdown", md, "| kds | http://a/hubs/k | 3 | 1 | 3 | 2 | 17 |"},
		{"markdown", md, "| kds | http://b/hubs/k | 1 | 4 | 1 | 1 | 0 |"},
		{"html", page.String(), `<td class="text">peak 3 waiting to retry at once, 1 gave up, 4 waits lengthened by Retry-After</td></tr>`},
		{"html", page.String(), `<tr><th>http://a/hubs/k</th><td>3</td><td>1</td><td>3</td><td>2</td><td>17</td></tr>`},
		{"html", page.String(), `<tr><th>http://b/hubs/k</th><td>1</td><td>4</td><td>1</td><td>1</td><td>0</td></tr>`},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s lacks %q", c.report, c.want)
		}
	}
}
