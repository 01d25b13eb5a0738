package conn

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A hub whose negotiate offers nothing the scenario can use, through the
// binary: each negotiate the server was sent is one failed sample
// (`other`, "unsupported transport"), never also a successful one; a
// negotiate answer declared JSON that is not is one `protocol` failure.
func TestNegotiateSamplesMatchRequests(t *testing.T) {
	answers := map[string]string{
		"notransports": `{"negotiateVersion":1,"connectionId":"abc","connectionToken":"t","availableTransports":[]}`,
		"sseonly":      `{"negotiateVersion":1,"connectionId":"abc","connectionToken":"t","availableTransports":[{"transport":"ServerSentEvents","transferFormats":["Text"]}]}`,
		"malformed":    `{"connectionId": 12, "availableTransports": [ garbage`,
	}
	for _, tc := range []struct{ hub, proto, class, msg string }{
		{"sseonly", "json", "other", "unsupported transport: server offers ServerSentEvents(Text)"},
		{"notransports", "json", "other", "unsupported transport: server offers none"},
		{"sseonly", "messagepack", "other", "unsupported transport: server offers ServerSentEvents(Text)"},
		{"malformed", "json", "protocol", "malformed JSON"},
	} {
		t.Run(tc.hub+"/"+tc.proto, func(t *testing.T) {
			var negotiates, others atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/hubs/"+tc.hub+"/negotiate" {
					others.Add(1)
					http.NotFound(w, r)
					return
				}
				negotiates.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, answers[tc.hub])
			}))
			defer srv.Close()
			dir := t.TempDir()
			plan := filepath.Join(dir, "plan.yaml")
			os.WriteFile(plan, []byte(`
target: `+srv.URL+`
scenarios:
  display:
    users: 3
    signalr:
      url: /hubs/`+tc.hub+`
      protocol: `+tc.proto+`
      invoke: [{method: Add, args: [1, 2]}]
      reconnect: {initial: 500ms, max: 1s}
load: {stages: [{duration: 3s, users: 1}]}
thresholds: ["negotiate: error_rate < 1%"]
`), 0o644)
			out := filepath.Join(dir, "res.json")
			o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", out, "-q")
			if o.Code != 1 {
				t.Errorf("want exit 1 (the negotiate threshold)\n%s", o)
			}
			r := e2etest.ReadResult(t, out)
			cs := conns(t, r, "display")
			neg := step(t, r, "display", "negotiate")
			sent := negotiates.Load()
			if neg.Requests != sent || neg.Successful != 0 || neg.ByClass[tc.class] != sent || sent == 0 {
				t.Errorf("negotiate %d requests, %d successful, by class %v; the server was sent %d", neg.Requests, neg.Successful, neg.ByClass, sent)
			}
			if cs.Attempts != sent || cs.Opened != 0 || cs.Failed != sent || cs.ByClass[tc.class] != sent {
				t.Errorf("connections %+v for %d negotiates", cs, sent)
			}
			if len(neg.Errors) == 0 || !strings.Contains(neg.Errors[0].Message, tc.msg) {
				t.Errorf("negotiate errors %+v, want %q", neg.Errors, tc.msg)
			}
			if n := others.Load(); n != 0 {
				t.Errorf("%d requests besides negotiate", n)
			}
		})
	}
}
