package convert

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// WebSocket connections recorded in a HAR (Chromium's _webSocketMessages
// on the upgrade's entry) become connection scenarios: the sends in order,
// a wait for each answer whose JSON says what kind of message it is, and
// the recorded pauses as holds. What a plan cannot send is listed in the
// plan's header comment, never dropped without a word.

// harWSMessage is one frame Chromium recorded: time in seconds since the
// epoch, opcode 1 text and 2 binary (data in base64).
type harWSMessage struct {
	Type   string  `json:"type"` // send or receive
	Time   float64 `json:"time"`
	Opcode int     `json:"opcode"`
	Data   string  `json:"data"`
}

// wsRecording is one recorded WebSocket connection.
type wsRecording struct {
	entry    int // the HAR entry, from 1
	u        *url.URL
	messages []harWSMessage
}

// isWebSocket tells a HAR entry that opened a WebSocket.
func (e *harEntry) isWebSocket() bool {
	if len(e.WebSocketMessages) > 0 || strings.EqualFold(e.ResourceType, "websocket") {
		return true
	}
	s := strings.ToLower(e.Request.URL)
	return strings.HasPrefix(s, "ws://") || strings.HasPrefix(s, "wss://")
}

// harWebSocket reads a WebSocket entry; its URL is written ws(s)://.
func harWebSocket(i int, e *harEntry) (*wsRecording, string) {
	u, err := url.Parse(e.Request.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Sprintf("entry %d: a WebSocket connection left out: its URL does not parse", i+1)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return nil, fmt.Sprintf("entry %d: a WebSocket connection left out: scheme %q is not ws(s)", i+1, u.Scheme)
	}
	return &wsRecording{entry: i + 1, u: u, messages: e.WebSocketMessages}, ""
}

// keptScheme is the target's scheme when no request of the main host was
// kept: the first kept request's, or for a recording of WebSocket
// connections only, the http(s) of the first one, and its host.
func keptScheme(kept []*exchange, ws []*wsRecording, main string) (scheme, host string) {
	if len(kept) > 0 {
		return kept[0].u.Scheme, main
	}
	u := ws[0].u
	if u.Scheme == "wss" {
		return "https", u.Host
	}
	return "http", u.Host
}

// messageKindKeys name the field of a JSON message that says what kind of
// message it is: what a wait can match on when the rest of the message
// (ids, times) differs from run to run.
var messageKindKeys = []string{"type", "event", "op", "action", "kind", "t"}

// wsScenarios renders the recorded connections as scenarios of n users
// each; the notes say what was left out.
func wsScenarios(rs []*wsRecording, name string, users int, minThink time.Duration) ([]*yaml.Node, []string) {
	var out, notes []string
	var nodes []*yaml.Node
	for k, r := range rs {
		scen := ident(name) + "_websocket"
		if len(rs) > 1 {
			scen += fmt.Sprint(k + 1)
		}
		steps, left := wsSteps(r, minThink)
		notes = append(notes, left...)
		if len(steps) == 0 {
			// A connection the recording saw no message on is held, as it
			// was: the plan still opens it.
			steps = append(steps, flow(mapping(str("hold"), str("run"))))
		}
		ws := mapping(str("url"), str(lit(r.u.String())), str("steps"), &yaml.Node{Kind: yaml.SequenceNode, Content: steps})
		sc := mapping(str("users"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(users)}, str("websocket"), ws)
		nodes = append(nodes, str(scen), sc)
		out = append(out, scen)
	}
	if len(out) > 0 {
		notes = append([]string{fmt.Sprintf("WebSocket connections recorded: %d, as scenario(s) %s (a connection of its own per user: it does not share the HTTP scenario's cookies; add headers: if the server needs them)", len(rs), strings.Join(out, ", "))}, notes...)
	}
	return nodes, notes
}

// wsSteps is one connection's script: its sends and the waits for the
// answers a plan can recognise, with the recorded pauses as holds.
func wsSteps(r *wsRecording, minThink time.Duration) ([]*yaml.Node, []string) {
	var steps []*yaml.Node
	var notes []string
	unmatched := 0
	for i, m := range r.messages {
		if i > 0 {
			if gap := secondsGap(r.messages[i-1].Time, m.Time); gap >= minThink {
				steps = append(steps, flow(mapping(str("hold"), str(durText(gap)))))
			}
		}
		switch strings.ToLower(m.Type) {
		case "send":
			if n, why := wsSend(m); n != nil {
				steps = append(steps, n)
			} else {
				notes = append(notes, fmt.Sprintf("entry %d: WebSocket message %d (sent) left out: %s", r.entry, i+1, why))
			}
		case "receive":
			if n := wsWait(m); n != nil {
				steps = append(steps, n)
			} else {
				unmatched++
			}
		}
	}
	if unmatched > 0 {
		notes = append(notes, fmt.Sprintf("entry %d: %d received WebSocket message(s) are not waited for: only a JSON object with a %s field is matched (add wait: {regex: ...} for the others)", r.entry, unmatched, strings.Join(messageKindKeys, "/")))
	}
	return steps, notes
}

// wsSend is a sent message as a send step, or why it cannot be one.
func wsSend(m harWSMessage) (*yaml.Node, string) {
	text := m.Data
	binary := m.Opcode == 2
	if binary {
		b, err := base64.StdEncoding.DecodeString(m.Data)
		if err != nil {
			return nil, "a binary message whose recorded data is not base64"
		}
		text = string(b)
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Sprintf("a binary message of %d bytes that are not text: a plan's binary: sends text", len(text))
	}
	if binary {
		return mapping(str("send"), flow(mapping(str("binary"), str(lit(text))))), ""
	}
	return mapping(str("send"), str(lit(text))), ""
}

// wsWait waits for a received message by the field that names its kind,
// or is nil when the message has none.
func wsWait(m harWSMessage) *yaml.Node {
	if m.Opcode == 2 {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal([]byte(m.Data), &obj) != nil {
		return nil
	}
	for _, k := range messageKindKeys {
		if v, ok := obj[k].(string); ok && v != "" {
			return mapping(str("wait"), flow(mapping(str("json"), str(k), str("equals"), str(lit(v)))))
		}
	}
	return nil
}

// secondsGap is the pause between two frames recorded in seconds since
// the epoch.
func secondsGap(a, b float64) time.Duration {
	d := b - a
	if d <= 0 || math.IsNaN(d) || d > 86400 {
		return 0
	}
	return time.Duration(d * float64(time.Second))
}
