package plan

import (
	"strings"
	"testing"
)

// Thresholds may name the ops a connection records (docs/reference/connections.md: sse open,
// poll, ...). Before, the plan listed the names itself and left out the
// SignalR transports' ops, so "sse open" and "poll" were refused as steps
// the plan does not have; the names now come from proto/opname, which the
// protocol packages record under.
func TestThresholdsOnTransportOps(t *testing.T) {
	for _, tc := range []struct{ transport, ok, refused string }{
		{"sse", "sse open", "poll"},
		{"long_polling", "poll", "sse open"},
		{"auto", "poll", ""},
		{"auto", "sse open", ""},
	} {
		src := `target: http://h
scenarios:
  hub:
    users: 1
    signalr: {url: /hub, transport: ` + tc.transport + `, invoke: [{method: Join}]}
load: {stages: [{duration: 1s, users: 1}]}
thresholds: ["` + tc.ok + `: p95 < 1s", "hub/invoke Join: p95 < 1s", "session: error_rate < 1%"]
`
		if _, err := Parse("p.yaml", []byte(src), nil); err != nil {
			t.Errorf("transport %s: %v", tc.transport, err)
		}
		if tc.refused == "" {
			continue
		}
		bad := strings.Replace(src, tc.ok+": p95", tc.refused+": p95", 1)
		if _, err := Parse("p.yaml", []byte(bad), nil); err == nil || !strings.Contains(err.Error(), "names step \""+tc.refused+"\"") {
			t.Errorf("transport %s: a threshold on %q, which it never records: %v", tc.transport, tc.refused, err)
		}
	}
}
