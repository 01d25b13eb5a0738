package signalr

import (
	"github.com/stampede-load/stampede/internal/proto/ws"
)

// Protocol is a hub protocol.
type Protocol uint8

const (
	JSON        Protocol = iota // text records ended by 0x1E
	MessagePack                 // binary, varint length prefixes
)

// String is the protocol's name in a handshake and a plan.
func (p Protocol) String() string {
	if p == MessagePack {
		return "messagepack"
	}
	return "json"
}

// ProtocolNamed is the protocol a plan names ("json" or "messagepack";
// anything else is JSON, the plan parser having refused it).
func ProtocolNamed(name string) Protocol {
	if name == "messagepack" {
		return MessagePack
	}
	return JSON
}

// transferFormat is what negotiate must offer for the protocol.
func (p Protocol) transferFormat() string {
	if p == MessagePack {
		return "Binary"
	}
	return "Text"
}

func (p Protocol) wsType() ws.MessageType {
	if p == MessagePack {
		return ws.Binary
	}
	return ws.Text
}

func (p Protocol) handshake() []byte {
	if p == MessagePack {
		return msgpackHandshake
	}
	return handshakeRequest
}

func (p Protocol) ping() []byte {
	if p == MessagePack {
		return msgpackPing
	}
	return pingRecord
}

func (p Protocol) close() []byte {
	if p == MessagePack {
		return msgpackClose
	}
	return closeRecord
}

func (p Protocol) invocation(typ int, id, target string, args []any) ([]byte, error) {
	if p == MessagePack {
		return appendMsgPackInvocation(typ, id, target, args)
	}
	return appendInvocation(nil, typ, id, target, args)
}

func (p Protocol) simple(typ int, id, errText string) []byte {
	if p == MessagePack {
		return appendMsgPackSimple(typ, id, errText)
	}
	return appendSimple(nil, typ, id, errText)
}
