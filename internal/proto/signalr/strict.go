package signalr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ProtocolViolation is server input the official clients refuse. Reason
// is the official client's own wording, so a user can search for it.
type ProtocolViolation struct {
	Reason string
}

func (e *ProtocolViolation) Error() string { return e.Reason }

func violation(reason string) error { return &ProtocolViolation{Reason: reason} }

// wireMessage is a JSON hub message with every field kept raw: a field
// that is absent stays nil, one that is null is "null", so the checks
// below tell the two apart as the official parsers do.
type wireMessage struct {
	Type           json.RawMessage `json:"type"`
	InvocationID   json.RawMessage `json:"invocationId"`
	Target         json.RawMessage `json:"target"`
	Arguments      json.RawMessage `json:"arguments"`
	Item           json.RawMessage `json:"item"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
	AllowReconnect json.RawMessage `json:"allowReconnect"`
	SequenceID     json.RawMessage `json:"sequenceId"`
	Headers        json.RawMessage `json:"headers"`
}

var null = []byte("null")

func present(raw json.RawMessage) bool { return raw != nil && !bytes.Equal(raw, null) }

// jsonString reads an optional string field: absent or null is "".
func jsonString(raw json.RawMessage, name string) (string, error) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", violation("Expected '" + name + "' to be of type String.")
	}
	return s, nil
}

// requiredString reads a string field the message type must carry.
func requiredString(raw json.RawMessage, name string) (string, error) {
	if raw == nil {
		return "", violation("Missing required property '" + name + "'.")
	}
	return jsonString(raw, name)
}

// fromWire checks a decoded record against the rules of the .NET
// JsonHubProtocol (its messages) and the JavaScript client (empty ids
// and targets), then fills m.
func fromWire(w *wireMessage, m *Message) error {
	if w.Type == nil {
		return violation("Missing required property 'type'.")
	}
	typ, err := strconv.ParseInt(string(w.Type), 10, 32)
	if err != nil {
		return violation("Expected 'type' to be of type Integer.")
	}
	if typ <= 0 {
		return errNoType
	}
	m.Type = int(typ)
	if m.InvocationID, err = jsonString(w.InvocationID, "invocationId"); err != nil {
		return err
	}
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
		return wireClose(w, m)
	case TypeAck, TypeSequence:
		return wireSequence(w, m)
	}
	return nil
}

// needID: the types that name an invocation must carry a non-empty id
// (the JavaScript client refuses "" as well as a missing one).
func needID(w *wireMessage, m *Message, kind string) error {
	if _, err := requiredString(w.InvocationID, "invocationId"); err != nil {
		return err
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
	} else if present(w.InvocationID) && m.InvocationID == "" {
		return violation("Invalid payload for Invocation message.")
	}
	var err error
	if m.Target, err = requiredString(w.Target, "target"); err != nil {
		return err
	}
	if m.Target == "" {
		return violation("Invalid payload for " + kind + " message.")
	}
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
	var err error
	if m.Error, err = jsonString(w.Error, "error"); err != nil {
		return err
	}
	if present(w.Error) && w.Result != nil {
		return violation("The 'error' and 'result' properties are mutually exclusive.")
	}
	m.Result = w.Result
	return nil
}

func wireClose(w *wireMessage, m *Message) error {
	var err error
	if m.Error, err = jsonString(w.Error, "error"); err != nil {
		return err
	}
	if present(w.AllowReconnect) {
		if err := json.Unmarshal(w.AllowReconnect, &m.AllowReconnect); err != nil {
			return violation("Expected 'allowReconnect' to be of type Boolean.")
		}
	}
	return nil
}

func wireSequence(w *wireMessage, m *Message) error {
	if w.SequenceID == nil {
		return violation("Missing required property 'sequenceId'.")
	}
	n, err := strconv.ParseInt(string(w.SequenceID), 10, 64)
	if err != nil {
		return violation("Expected 'sequenceId' to be of type Integer.")
	}
	m.SequenceID = n
	return nil
}

// wireHeaders: headers, when sent, map names to strings.
func wireHeaders(raw json.RawMessage, m *Message) error {
	if !present(raw) {
		return nil
	}
	var h map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &h) != nil {
		return violation("Expected 'headers' to be of type Object.")
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
