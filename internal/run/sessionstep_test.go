package run

import (
	"testing"

	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
)

// SessionStep is the name both protocols record a held connection's
// session under: levels take a level's sessions from the finished run by
// it (levels.sessionsToEnd).
func TestSessionStepIsTheProtocolsSession(t *testing.T) {
	if ws.OpSession.String() != SessionStep || signalr.OpSession.String() != SessionStep {
		t.Errorf("SessionStep %q; WebSocket records %q, SignalR %q", SessionStep, ws.OpSession.String(), signalr.OpSession.String())
	}
}
