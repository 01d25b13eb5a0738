package signalr

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/sample"
)

// negotiateHub answers POST /hubs/{name}/negotiate with answers[name]
// (JSON) and counts the negotiate requests it was sent; every other
// request (an upgrade, an event stream) is refused 403 and counted apart.
type negotiateHub struct {
	*httptest.Server
	negotiates atomic.Int64
	others     atomic.Int64
}

const (
	offersNothing  = `{"negotiateVersion":1,"connectionId":"abc","connectionToken":"t","availableTransports":[]}`
	offersSSEOnly  = `{"negotiateVersion":1,"connectionId":"abc","connectionToken":"t","availableTransports":[{"transport":"ServerSentEvents","transferFormats":["Text"]}]}`
	offersWSAndSSE = `{"negotiateVersion":1,"connectionId":"abc","connectionToken":"t","availableTransports":[` +
		`{"transport":"WebSockets","transferFormats":["Text","Binary"]},{"transport":"ServerSentEvents","transferFormats":["Text"]}]}`
)

func newNegotiateHub(t *testing.T, answers map[string]func(host string) string) *negotiateHub {
	t.Helper()
	h := &negotiateHub{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, isNeg := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/hubs/"), "/negotiate")
		if !isNeg || r.Method != http.MethodPost || answers[name] == nil {
			h.others.Add(1)
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		h.negotiates.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answers[name](r.Host))
	}))
	t.Cleanup(h.Close)
	return h
}

func fixed(s string) func(string) string { return func(string) string { return s } }

// samples is how many outcomes r holds for the negotiate ops, all hops.
func (r *rec) negotiateSamples() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[OpNegotiate.name]) + len(r.seen[OpNegotiateRedirect.name]) + len(r.seen[OpNegotiateRestart.name])
}

// TestNegotiateWithoutUsableTransportIsOneSample: a negotiate whose answer
// offers nothing the scenario can use is one failed negotiate, with the
// request's latency, and never also a successful one; each negotiate the
// server was sent is one sample, whatever hop it was.
func TestNegotiateWithoutUsableTransportIsOneSample(t *testing.T) {
	noLeak(t, nil)
	h := newNegotiateHub(t, map[string]func(string) string{
		"notransports": fixed(offersNothing),
		"sseonly":      fixed(offersSSEOnly),
		"toazure":      func(host string) string { return `{"url":"http://` + host + `/hubs/notransports","accessToken":"x"}` },
	})
	const tries = 3
	for _, tc := range []struct {
		hub       string
		proto     Protocol
		transport Transport
		restart   bool
		want      map[string][]sample.Class
	}{
		{"notransports", JSON, WebSockets, false, map[string][]sample.Class{"negotiate": {sample.Other}}},
		{"sseonly", JSON, WebSockets, false, map[string][]sample.Class{"negotiate": {sample.Other}}},
		{"notransports", MessagePack, WebSockets, false, map[string][]sample.Class{"negotiate": {sample.Other}}},
		{"sseonly", MessagePack, Auto, false, map[string][]sample.Class{"negotiate": {sample.Other}}},
		// The hop whose answer offers nothing is the failed one.
		{"toazure", JSON, WebSockets, false, map[string][]sample.Class{"negotiate": {sample.OK}, "negotiate redirect": {sample.Other}}},
		{"notransports", JSON, Auto, true, map[string][]sample.Class{"negotiate restart": {sample.Other}}},
	} {
		name := fmt.Sprintf("%s/%s/%s/restart=%v", tc.hub, tc.proto, tc.transport, tc.restart)
		t.Run(name, func(t *testing.T) {
			o := testOptions()
			o.Protocol, o.Transport = tc.proto, tc.transport
			r := &rec{}
			o.Recorder = r
			h.negotiates.Store(0)
			for range tries {
				if tc.restart {
					o.Stats.restarts.n.Add(1)
				}
				c, err := Connect(ctx5(t), h.URL+"/hubs/"+tc.hub, nil, o)
				if err == nil {
					c.Abort()
					t.Fatal("connected")
				}
				if !strings.Contains(err.Error(), "unsupported transport: server offers ") {
					t.Errorf("error %v", err)
				}
			}
			o.HTTPClient.CloseIdleConnections()
			for op, one := range tc.want {
				want := slices.Repeat(one, tries)
				if got := r.classes(op); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", op, got, want)
				}
			}
			if n, sent := r.negotiateSamples(), h.negotiates.Load(); int64(n) != sent {
				t.Errorf("%d negotiate samples for the %d negotiates the server was sent", n, sent)
			}
			for op, one := range tc.want {
				if one[len(one)-1] != sample.OK && r.durs[op] <= 0 {
					t.Errorf("%s: the failure was recorded without the request's latency", op)
				}
			}
			if h.others.Load() != 0 {
				t.Errorf("%d requests besides negotiate: nothing should have been tried", h.others.Load())
			}
		})
	}
}

// TestFallbackNegotiatesEachOneSample: auto negotiates once per transport
// tried; each of those negotiates is one successful sample and each
// transport that failed to start one failure of its own.
func TestFallbackNegotiatesEachOneSample(t *testing.T) {
	noLeak(t, nil)
	h := newNegotiateHub(t, map[string]func(string) string{"both": fixed(offersWSAndSSE)})
	o := testOptions()
	o.Transport = Auto
	r := &rec{}
	o.Recorder = r
	c, err := Connect(ctx5(t), h.URL+"/hubs/both", nil, o)
	if err == nil {
		c.Abort()
		t.Fatal("connected")
	}
	o.HTTPClient.CloseIdleConnections()
	if got := r.classes("negotiate"); !slices.Equal(got, []sample.Class{sample.OK, sample.OK}) || h.negotiates.Load() != 2 {
		t.Errorf("negotiate %v for %d negotiates sent", got, h.negotiates.Load())
	}
	for _, op := range []string{"upgrade", "sse open"} {
		if got := r.classes(op); !slices.Equal(got, []sample.Class{sample.ClientError}) {
			t.Errorf("%s %v, want one client_error", op, got)
		}
	}
	if h.others.Load() != 2 || o.Stats.Fallbacks.Load() != 1 {
		t.Errorf("%d transport requests, %d fallbacks", h.others.Load(), o.Stats.Fallbacks.Load())
	}
}

// TestNegotiateMalformedJSON: an answer declared JSON that the official
// clients cannot read is the hub breaking the protocol; an answer not
// declared JSON that is not JSON (a proxy's error page) is not the hub
// speaking, and stays other. Either way it is one failed negotiate.
func TestNegotiateMalformedJSON(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	for _, tc := range []struct {
		name, ct, body string
		class          sample.Class
		msg            string
	}{
		{"truncated", "application/json", `{"connectionId": 12, "availableTransports": [ garbage`, sample.Protocol,
			`negotiate: malformed JSON: invalid character 'g' looking for beginning of value in "{\"connectionId\": 12`},
		{"garbage", "application/json; charset=utf-8", "{nope", sample.Protocol, `negotiate: malformed JSON: invalid character 'n'`},
		{"empty", "application/json", "", sample.Protocol, "negotiate: malformed JSON: empty answer"},
		{"html declared json", "application/json", "<html>busy</html>", sample.Protocol, "negotiate: malformed JSON: invalid character '<'"},
		{"id a number", "application/json", `{"negotiateVersion":1,"connectionId":12,"connectionToken":"t","availableTransports":[]}`, sample.Protocol,
			"Expected 'connectionId' to be of type String."},
		{"formats a string", "application/json", `{"negotiateVersion":1,"connectionId":"c","connectionToken":"t","availableTransports":[{"transport":"WebSockets","transferFormats":"Text"}]}`,
			sample.Protocol, "Expected 'transferFormats' to be of type Array."},
		{"an array", "application/json", `[]`, sample.Protocol, "Expected a JSON Object."},
		// Not declared JSON: as before.
		{"html", "text/html; charset=utf-8", "<!doctype html><html>hi</html>", sample.Other, "negotiate: expected JSON, got text/html"},
		{"plain", "text/plain", "{nope", sample.Other, `negotiate: expected JSON, got "{nope"`},
	} {
		ts := rawHub(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", tc.ct)
			w.Write([]byte(tc.body))
		}, func(context.Context, *websocket.Conn, []byte) {})
		r := &rec{}
		o.Recorder = r
		e := connectErr(t, ts, o)
		if e.Class != tc.class || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("%s: %v (%v), want %v with %q", tc.name, e, e.Class, tc.class, tc.msg)
		}
		if got := r.classes("negotiate"); !slices.Equal(got, []sample.Class{tc.class}) {
			t.Errorf("%s: negotiate %v, want one %v", tc.name, got, tc.class)
		}
	}
}
