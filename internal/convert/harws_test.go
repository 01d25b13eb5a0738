package convert

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// The WebSocket scenario a recording becomes runs: against a loopback
// server that answers a subscribe as the recorded one did, every send
// arrives in order and the wait on the answer's type succeeds.
func TestHARWebSocketScenarioRuns(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, typ.String()+" "+string(b))
			mu.Unlock()
			if strings.Contains(string(b), "subscribe") {
				_ = c.Write(r.Context(), websocket.MessageText, []byte(`{"id":"x1","type":"subscribed"}`))
			}
		}
	}))
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/live"
	msgs := []map[string]any{
		{"type": "send", "time": 100.0, "opcode": 1, "data": `{"op":"subscribe"}`},
		{"type": "receive", "time": 100.1, "opcode": 1, "data": `{"type":"subscribed","id":"r9"}`},
		{"type": "send", "time": 100.3, "opcode": 2, "data": base64.StdEncoding.EncodeToString([]byte("frame"))},
		{"type": "send", "time": 100.3, "opcode": 1, "data": "bye"},
	}
	har, err := json.Marshal(map[string]any{"log": map[string]any{"entries": []any{map[string]any{
		"request":            map[string]any{"method": "GET", "url": wsURL},
		"response":           map[string]any{"status": 101},
		"_resourceType":      "websocket",
		"_webSocketMessages": msgs,
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := HAR(har, Options{Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("ws.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	res, err := run.Run(context.Background(), p, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`MessageText {"op":"subscribe"}`, "MessageBinary frame", "MessageText bye"}
	if len(got) < len(want) {
		t.Fatalf("the server got %q, want at least %q\n%s", got, want, out)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("message %d: %q, want %q (all: %q)\n%s", i+1, got[i], w, got, out)
		}
	}
	waits := int64(0)
	for _, st := range res.Steps {
		if strings.HasPrefix(st.Name, "wait") {
			waits += st.Successful
		}
		if st.Failed > 0 {
			t.Errorf("step %s failed %d times: %v", st.Name, st.Failed, st.Errors)
		}
	}
	if waits == 0 {
		t.Errorf("no wait succeeded; steps %+v", res.Steps)
	}
}
