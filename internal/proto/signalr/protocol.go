package signalr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// RS ends every JSON hub protocol record (handshake included).
const RS = 0x1e

// Message types of the hub protocol.
const (
	TypeInvocation       = 1
	TypeStreamItem       = 2
	TypeCompletion       = 3
	TypeStreamInvocation = 4
	TypeCancelInvocation = 5
	TypePing             = 6
	TypeClose            = 7
	TypeAck              = 8
	TypeSequence         = 9
)

// Message is one decoded hub message. Only the fields of its type are set;
// payloads stay raw JSON so the client never decodes what it only counts.
type Message struct {
	Type           int               `json:"type"`
	InvocationID   string            `json:"invocationId,omitempty"`
	Target         string            `json:"target,omitempty"`
	Arguments      json.RawMessage   `json:"arguments,omitempty"`
	Item           json.RawMessage   `json:"item,omitempty"`
	Result         json.RawMessage   `json:"result,omitempty"`
	Error          string            `json:"error,omitempty"`
	AllowReconnect bool              `json:"allowReconnect,omitempty"`
	SequenceID     int64             `json:"sequenceId,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
}

// SplitRecords cuts data at record separators. rest is what follows the
// last separator: an incomplete record, or empty.
func SplitRecords(data []byte, fn func(rec []byte) error) (rest []byte, err error) {
	for {
		i := bytes.IndexByte(data, RS)
		if i < 0 {
			return data, nil
		}
		if err := fn(data[:i]); err != nil {
			return data[i+1:], err
		}
		data = data[i+1:]
	}
}

var errNoType = errors.New("no message type")

// ParseMessage decodes one record (without its separator).
func ParseMessage(rec []byte) (Message, error) {
	var m Message
	w := newWire()
	if err := decodeWire(rec, &w); err != nil {
		return m, fmt.Errorf("bad hub message %s: %w", snippet(rec), err)
	}
	if err := fromWire(&w, &m); err != nil {
		return Message{}, fmt.Errorf("bad hub message %s: %w", snippet(rec), err)
	}
	return m, nil
}

// ParseHandshake decodes the server's handshake answer: nil, or the error
// it carries. What the official clients refuse is refused: anything but an
// object (.NET), an error that is not a string (.NET), a hub message in its
// place (JavaScript). The refused record is quoted in the error, so a hub
// message sent too early is not lost without a trace.
func ParseHandshake(rec []byte) error {
	var h struct {
		Error json.RawMessage `json:"error"`
		Type  json.RawMessage `json:"type"`
	}
	trimmed := bytes.TrimSpace(rec)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("invalid handshake response %s: %w", snippet(rec), violation("Expected a JSON Object."))
	}
	if err := json.Unmarshal(rec, &h); err != nil {
		return fmt.Errorf("invalid handshake response %s: %w", snippet(rec), violation(err.Error()))
	}
	if h.Type != nil {
		return fmt.Errorf("invalid handshake response %s: %w", snippet(rec), violation("Expected a handshake response from the server."))
	}
	if h.Error == nil {
		return nil
	}
	var msg string
	if h.Error[0] != '"' || json.Unmarshal(h.Error, &msg) != nil {
		return fmt.Errorf("invalid handshake response %s: %w", snippet(rec), violation("Expected 'error' to be of type String."))
	}
	return &handshakeRefused{msg: msg}
}

type handshakeRefused struct{ msg string }

func (e *handshakeRefused) Error() string { return "server refused: " + e.msg }

// snippet quotes the start of a bad record for an error message.
func snippet(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "…"
	}
	return strconv.Quote(string(b))
}

var handshakeRequest = []byte(`{"protocol":"json","version":1}` + "\x1e")

var pingRecord = []byte(`{"type":6}` + "\x1e")

var closeRecord = []byte(`{"type":7}` + "\x1e")

// appendInvocation encodes an Invocation (id "" for a fire-and-forget
// send) or a StreamInvocation.
func appendInvocation(b []byte, typ int, id, target string, args []any) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = strconv.AppendInt(b, int64(typ), 10)
	if id != "" {
		b = append(b, `,"invocationId":`...)
		b = appendString(b, id)
	}
	b = append(b, `,"target":`...)
	b = appendString(b, target)
	b = append(b, `,"arguments":`...)
	if args == nil {
		args = []any{}
	}
	ab, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	b = append(b, ab...)
	b = append(b, '}', RS)
	return b, nil
}

func appendSimple(b []byte, typ int, id, errText string) []byte {
	b = append(b, `{"type":`...)
	b = strconv.AppendInt(b, int64(typ), 10)
	b = append(b, `,"invocationId":`...)
	b = appendString(b, id)
	if errText != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, errText)
	}
	return append(b, '}', RS)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
