package signalr

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// ProtocolViolation is server input the official clients refuse. Reason
// is the official client's own wording, so a user can search for it.
type ProtocolViolation struct {
	Reason string
}

func (e *ProtocolViolation) Error() string { return e.Reason }

func violation(reason string) error { return &ProtocolViolation{Reason: reason} }

// wireMessage is a JSON hub message as decoded before its checks. A field
// that is absent (or null) keeps the sentinel newWire put there, so the
// checks tell missing fields from empty ones as the official parsers do,
// without a pointer or a copy per field.
type wireMessage struct {
	Type           int                        `json:"type"`
	InvocationID   string                     `json:"invocationId"`
	Target         string                     `json:"target"`
	Arguments      json.RawMessage            `json:"arguments"`
	Item           json.RawMessage            `json:"item"`
	Result         json.RawMessage            `json:"result"`
	Error          string                     `json:"error"`
	AllowReconnect bool                       `json:"allowReconnect"`
	SequenceID     int64                      `json:"sequenceId"`
	Headers        map[string]json.RawMessage `json:"headers"`
}

// absent marks a string field the record did not set (or set to null):
// a server would have to send this exact NUL-led string to forge it.
const absent = "\x00\ufffdabsent"

const (
	noType     = math.MinInt
	noSequence = math.MinInt64
)

func newWire() wireMessage {
	return wireMessage{Type: noType, InvocationID: absent, Target: absent, Error: absent, SequenceID: noSequence}
}

// decodeWire decodes a record; a field of the wrong JSON type is refused
// in the .NET client's words.
func decodeWire(rec []byte, w *wireMessage) error {
	err := json.Unmarshal(rec, w)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := te.Field
		if i := strings.IndexByte(field, '.'); i >= 0 {
			field = field[:i]
		}
		kind := "String"
		switch field {
		case "type", "sequenceId":
			kind = "Integer"
		case "allowReconnect":
			kind = "Boolean"
		case "headers":
			kind = "Object"
		}
		return violation("Expected '" + field + "' to be of type " + kind + ".")
	}
	return err
}

// orEmpty is a string field's value, "" when absent.
func orEmpty(s string) string {
	if s == absent {
		return ""
	}
	return s
}

// fromWire checks a decoded record against the rules of the .NET
// JsonHubProtocol (its messages) and the JavaScript client (empty ids
// and targets), then fills m.
func fromWire(w *wireMessage, m *Message) error {
	if w.Type == noType {
		return violation("Missing required property 'type'.")
	}
	if w.Type <= 0 {
		return errNoType
	}
	m.Type = w.Type
	m.InvocationID = orEmpty(w.InvocationID)
	if err := wireHeaders(w.Headers, m); err != nil {
		return err
	}
	switch m.Type {
	case TypeInvocation, TypeStreamInvocation:
		return wireInvocation(w, m)
	case TypeStreamItem:
		return wireStreamItem(w, m)
	case TypeCompletion:
		return wireCompletion(w, m)
	case TypeCancelInvocation:
		return needID(w, m, "CancelInvocation")
	case TypeClose:
		m.Error, m.AllowReconnect = orEmpty(w.Error), w.AllowReconnect
	case TypeAck, TypeSequence:
		if w.SequenceID == noSequence {
			return violation("Missing required property 'sequenceId'.")
		}
		m.SequenceID = w.SequenceID
	}
	return nil
}

// needID: the types that name an invocation must carry a non-empty id
// (the JavaScript client refuses "" as well as a missing one).
func needID(w *wireMessage, m *Message, kind string) error {
	if w.InvocationID == absent {
		return violation("Missing required property 'invocationId'.")
	}
	if m.InvocationID == "" {
		return violation("Invalid payload for " + kind + " message.")
	}
	return nil
}

func wireInvocation(w *wireMessage, m *Message) error {
	kind := "Invocation"
	if m.Type == TypeStreamInvocation {
		kind = "StreamInvocation"
		if err := needID(w, m, kind); err != nil {
			return err
		}
	} else if w.InvocationID == "" {
		return violation("Invalid payload for Invocation message.")
	}
	if w.Target == absent {
		return violation("Missing required property 'target'.")
	}
	if w.Target == "" {
		return violation("Invalid payload for " + kind + " message.")
	}
	m.Target = w.Target
	if w.Arguments == nil {
		return violation("Missing required property 'arguments'.")
	}
	if w.Arguments[0] != '[' {
		return violation("Expected 'arguments' to be of type Array.")
	}
	m.Arguments = w.Arguments
	return nil
}

func wireStreamItem(w *wireMessage, m *Message) error {
	if err := needID(w, m, "StreamItem"); err != nil {
		return err
	}
	if w.Item == nil {
		return violation("Missing required property 'item'.")
	}
	m.Item = w.Item
	return nil
}

// wireCompletion: an empty error is no error, as both official clients
// read it (JavaScript by truthiness, .NET by string.IsNullOrEmpty).
func wireCompletion(w *wireMessage, m *Message) error {
	if err := needID(w, m, "Completion"); err != nil {
		return err
	}
	if w.Error != absent && w.Result != nil {
		return violation("The 'error' and 'result' properties are mutually exclusive.")
	}
	m.Error, m.Result = orEmpty(w.Error), w.Result
	return nil
}

// wireHeaders: headers, when sent, map names to strings.
func wireHeaders(h map[string]json.RawMessage, m *Message) error {
	if h == nil {
		return nil
	}
	m.Headers = make(map[string]string, len(h))
	for k, v := range h {
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return violation(fmt.Sprintf("Expected header '%s' to be of type String.", k))
		}
		m.Headers[k] = s
	}
	return nil
}
