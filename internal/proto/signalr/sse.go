package signalr

import (
	"bytes"
	"fmt"
)

// sseParser reads a text/event-stream (WHATWG HTML, "Server-sent events")
// fed in arbitrary chunks: lines end in CRLF, LF or CR (a CRLF may be cut
// between chunks); data fields accumulate, joined by LF, until a blank
// line dispatches the event; comments and other fields are skipped. SignalR
// sends unnamed events whose data is one transport frame.
type sseParser struct {
	max     int    // the longest line, and the largest event, accepted
	line    []byte // the line being read
	data    []byte // the event's data so far
	hasData bool
	skipLF  bool // the last chunk ended in CR: a leading LF ends nothing
}

// errSSETooLong is a line or an event over the limit: a server streaming
// without line ends would otherwise grow our buffer for ever.
type errSSETooLong struct{ what string }

func (e *errSSETooLong) Error() string { return "server-sent event " + e.what + " over the size limit" }

// feed parses chunk, calling fn with each complete event's data (valid
// only during the call).
func (p *sseParser) feed(chunk []byte, fn func(data []byte) error) error {
	for len(chunk) > 0 {
		if p.skipLF {
			p.skipLF = false
			if chunk[0] == '\n' {
				chunk = chunk[1:]
				continue
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			if len(p.line)+len(chunk) > p.max {
				return &errSSETooLong{"line"}
			}
			p.line = append(p.line, chunk...)
			return nil
		}
		if len(p.line)+i > p.max {
			return &errSSETooLong{"line"}
		}
		var line []byte
		if len(p.line) > 0 {
			p.line = append(p.line, chunk[:i]...)
			line = p.line
		} else {
			line = chunk[:i]
		}
		if chunk[i] == '\r' {
			if i+1 < len(chunk) {
				if chunk[i+1] == '\n' {
					i++
				}
			} else {
				p.skipLF = true
			}
		}
		chunk = chunk[i+1:]
		err := p.lineDone(line, fn)
		p.line = p.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *sseParser) lineDone(line []byte, fn func([]byte) error) error {
	if len(line) == 0 {
		if !p.hasData {
			return nil
		}
		data := p.data
		p.data, p.hasData = p.data[:0], false
		err := fn(data)
		if cap(p.data) > 4<<10 {
			// One large event should not pin its buffer on an idle
			// connection.
			p.data = nil
		}
		return err
	}
	if line[0] == ':' {
		return nil // a comment, as servers send to keep proxies awake
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	if string(field) != "data" {
		return nil // event, id, retry: SignalR uses none of them
	}
	if len(p.data)+len(value)+1 > p.max {
		return &errSSETooLong{"data"}
	}
	if p.hasData {
		p.data = append(p.data, '\n')
	}
	p.data = append(p.data, value...)
	p.hasData = true
	return nil
}

// pending says how much of an unfinished line or event is held, for the
// message when the stream ends inside one.
func (p *sseParser) pending() string {
	switch {
	case len(p.line) > 0:
		return fmt.Sprintf("%d bytes of a line without its end", len(p.line))
	case p.hasData:
		return fmt.Sprintf("an event of %d bytes without its blank line", len(p.data))
	}
	return ""
}
