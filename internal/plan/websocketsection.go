package plan

import (
	"strconv"

	"gopkg.in/yaml.v3"
)

// The websocket: section of a connection scenario and its steps.

var websocketKeys = []string{"url", "subprotocols", "headers", "connect_timeout", "keep_alive", "server_timeout", "steps", "reconnect"}

func (p *parser) websocketSection(s *Scenario, n *yaml.Node) {
	c := p.connection(s, n, KindWebSocket)
	if c == nil {
		return
	}
	spec := &WebSocketSpec{Pos: p.pos(deref(n))}
	c.WebSocket = spec
	sc := p.scope(map[string]int{})
	f := p.fields(n, "websocket section", websocketKeys)
	if e, ok := f["url"]; ok {
		spec.URL = p.connURL(e.v, sc, []string{"ws", "wss", "http", "https"})
	} else if (deref(n).Kind == yaml.MappingNode || isNull(deref(n))) && p.missing(n, "url") {
		p.errf(deref(n), "websocket section has no url: expected url: ws://host/path or a path joined to the target")
	}
	if e, ok := f["subprotocols"]; ok {
		items := []*yaml.Node{e.v}
		if v := deref(e.v); v.Kind == yaml.SequenceNode {
			items, _ = p.list(v, "subprotocols")
		}
		for _, it := range items {
			if s, ok := p.text(it, "subprotocol"); ok {
				if !isToken(s) {
					p.errf(it, "bad subprotocol %s: expected a token such as chat.v1", q(s))
					continue
				}
				spec.Subprotocols = append(spec.Subprotocols, s)
			}
		}
	}
	if e, ok := f["headers"]; ok {
		spec.Headers = p.connHeaders(e.v, sc)
	} else {
		spec.Headers = append([]Header(nil), p.plan.Defaults.Headers...)
	}
	if e, ok := f["connect_timeout"]; ok {
		spec.ConnectTimeout, _ = p.duration(e.v, "connect_timeout", false)
	}
	if e, ok := f["keep_alive"]; ok {
		spec.KeepAlive = max(p.onOff(e.v, "keep_alive"), 0)
	}
	if e, ok := f["server_timeout"]; ok {
		spec.ServerTimeout = max(p.onOff(e.v, "server_timeout"), 0)
	}
	if e, ok := f["reconnect"]; ok {
		p.reconnect(c, e.v)
	}
	if e, ok := f["steps"]; ok {
		items, _ := p.list(e.v, "websocket steps")
		for i, it := range items {
			if st, ok := p.wsStep(it, i+1, sc); ok {
				spec.Steps = append(spec.Steps, st)
			}
		}
	}
	spec.Captures = len(sc.capOrder)
	spec.CaptureNames = sc.capOrder
	p.noData(sc, spec.Pos)
}

var wsStepKinds = []string{"send", "wait", "hold", "close"}

func (p *parser) wsStep(n *yaml.Node, num int, sc *scope) (WSStep, bool) {
	n = deref(n)
	st := WSStep{Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad websocket step: expected a mapping with one of send, wait, hold, close, found %s", kindName(n))
		return st, false
	}
	f := p.fields(n, "websocket step", append([]string{"name"}, wsStepKinds...))
	kind := p.oneOf(f, wsStepKinds, "websocket step", "exactly one of send, wait, hold, close")
	if kind == nil {
		if p.missing(n, "send") && p.missing(n, "wait") && p.missing(n, "hold") && p.missing(n, "close") {
			p.errf(n, "websocket step does nothing: expected one of send, wait, hold, close")
		}
		return st, false
	}
	st.Name = kind.key + " " + strconv.Itoa(num)
	if e, ok := f["name"]; ok {
		if kind.key == "hold" || kind.key == "close" {
			p.errf(e.k, "name applies to send and wait steps, which are timed")
		} else if s, ok := p.text(e.v, "name"); ok && s != "" {
			st.Name = s
		}
	}
	good := true
	switch kind.key {
	case "send":
		st.Kind = WSSend
		good = p.wsSend(&st, kind.v, sc)
	case "wait":
		st.Kind = WSWait
		good = p.wsWait(&st, kind.v, sc)
	case "hold":
		st.Kind = WSHold
		st.Hold, good = p.holdValue(kind.v)
	case "close":
		st.Kind = WSClose
		st.Code = 1000
		good = p.wsClose(&st, kind.v)
	}
	return st, good
}

// wsSend reads send: TEXT, or {text: T}, {json: VALUE} or {binary: T}.
func (p *parser) wsSend(st *WSStep, n *yaml.Node, sc *scope) bool {
	v := deref(n)
	if v.Kind == yaml.ScalarNode && !isNull(v) {
		st.Body = p.tmpl(v, "send", modeRaw, sc)
		return st.Body != nil
	}
	f := p.fields(n, "send", []string{"text", "json", "binary"})
	body := p.oneOf(f, []string{"text", "json", "binary"}, "send", "one of text, json, binary")
	if body == nil {
		if p.missing(n, "text") && p.missing(n, "json") {
			p.errf(v, "send has no message: expected send: TEXT, {text: T}, {json: VALUE} or {binary: T}")
		}
		return false
	}
	switch body.key {
	case "json":
		st.Body = p.jsonBody(body.v, sc)
	default:
		st.Body = p.tmpl(body.v, "send "+body.key, modeRaw, sc)
		st.Binary = body.key == "binary"
	}
	return st.Body != nil
}

func (p *parser) wsWait(st *WSStep, n *yaml.Node, sc *scope) bool {
	st.Timeout = defaultWaitTimeout
	f := p.fields(n, "wait", []string{"json", "equals", "regex", "timeout", "capture"})
	good := true
	if e, ok := f["json"]; ok {
		if s, ok := p.text(e.v, "json path"); ok {
			if path, ok := jsonPath(s); ok {
				st.Path = path
			} else {
				p.errf(e.v, "bad json path %s: expected dotted names and indexes such as order.items.0.id", q(s))
				good = false
			}
		}
	}
	if e, ok := f["equals"]; ok {
		if st.Path == nil && f["json"].v == nil {
			p.errf(e.k, "equals compares the value at a json path: add json: PATH")
			good = false
		}
		v := deref(e.v)
		if v.Kind != yaml.ScalarNode {
			p.errf(v, "bad equals: expected a single value, found %s", kindName(v))
			good = false
		} else {
			st.Equals, st.HasEquals = p.expectedScalar(v, "equals")
		}
	}
	if e, ok := f["json"]; ok && f["equals"].v == nil {
		p.errf(e.k, "wait json needs equals: expected {json: PATH, equals: VALUE} (match any message with regex instead)")
		good = false
	}
	if e, ok := f["regex"]; ok {
		if s, ok := p.text(e.v, "regex"); ok {
			re, msg := compileRegex(s)
			if msg != "" {
				p.errf(e.v, "bad regex %s: %s", q(s), msg)
				good = false
			}
			st.Regex = re
		}
	}
	if e, ok := f["timeout"]; ok {
		d, ok := p.duration(e.v, "timeout", false)
		st.Timeout = d
		good = good && ok
	}
	// Captures come last: they name what later steps may use.
	if e, ok := f["capture"]; ok {
		st.Captures = p.captures(e.v, sc)
		for _, c := range st.Captures {
			if c.Kind == CaptureHeader {
				p.errAt(c.Pos, "capture %s: header captures apply to HTTP steps; capture from a message with json or regex", q(c.Name))
				good = false
			}
		}
	}
	return good
}

func (p *parser) wsClose(st *WSStep, n *yaml.Node) bool {
	f := p.fields(n, "close", []string{"code", "reason"})
	good := true
	if e, ok := f["code"]; ok {
		v, ok := p.intMin(e.v, "close code", 1000)
		// 1000 and 3000-4999 are what an application may send (RFC 6455
		// 7.4; 1001-1015 are for endpoints' own conditions).
		if ok && !(v == 1000 || v >= 3000 && v <= 4999) {
			p.errf(e.v, "bad close code %d: expected 1000 (normal) or an application code 3000-4999", v)
			ok = false
		}
		st.Code = v
		good = ok
	}
	if e, ok := f["reason"]; ok {
		if s, ok := p.text(e.v, "reason"); ok {
			if len(s) > 123 {
				p.errf(e.v, "close reason too long: at most 123 bytes fit in a close frame")
				good = false
			}
			st.Reason = s
		}
	}
	return good
}
