package plan

import (
	"strings"
	"testing"
)

// TestSignalRStatefulReconnect: stateful_reconnect is read, and refused
// where it cannot work (without negotiate, or over a transport other than
// WebSockets).
func TestSignalRStatefulReconnect(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    bool
	}{
		{"", false},
		{", stateful_reconnect: true", true},
		{", stateful_reconnect: true, transport: auto", true},
		{", stateful_reconnect: false, transport: sse", false},
	} {
		p, err := Parse("p.yaml", []byte(signalrPlan(tc.section)), fixtureEnv)
		if err != nil {
			t.Fatalf("%q: %v", tc.section, err)
		}
		if got := p.Scenarios[0].Connection.Spec().SignalR.StatefulReconnect; got != tc.want {
			t.Errorf("%q: stateful %v", tc.section, got)
		}
	}
	for _, tc := range []struct{ section, want string }{
		{", stateful_reconnect: true, skip_negotiate: true", "stateful_reconnect needs negotiate, but skip_negotiate is set"},
		{", stateful_reconnect: true, transport: long_polling", "stateful_reconnect works over websockets only, not long_polling"},
		{", stateful_reconnect: yes please", "stateful_reconnect"},
	} {
		_, err := Parse("p.yaml", []byte(signalrPlan(tc.section)), fixtureEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.section, err, tc.want)
		}
	}
}
