package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// TestConnectionsShowCloseKindsAndStreamItems: the SignalR Close kinds and
// per-stream item counts of the result reach the summary.
func TestConnectionsShowCloseKindsAndStreamItems(t *testing.T) {
	r := &result.Result{Connections: &result.Connections{Scenarios: []result.ConnScenario{{
		Scenario: "kds", Protocol: "signalr", Attempts: 3, Opened: 3,
		Disconnects:  map[string]int64{"server_close": 3},
		ServerCloses: map[string]int64{"graceful": 2, "error": 1, "allow_reconnect": 1},
		StreamItems:  map[string]int64{"Orders": 41},
	}}}}
	var b bytes.Buffer
	connections(&b, r)
	for _, want := range []string{"Server Close messages: graceful 2, allow_reconnect 1, error 1", "Stream items: Orders 41"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
