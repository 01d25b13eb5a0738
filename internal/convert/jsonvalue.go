package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// JSON kept in order, so a converted body reads as it was sent.

type jv struct {
	kind byte // o(bject) a(rray) s(tring) n(umber) b(ool) z (null)
	s    string
	keys []string
	vals []*jv
	f    *field // string and number leaves
}

func parseJSON(b []byte) (*jv, error) {
	if jsonTooDeep(b) {
		return nil, errJSONTooDeep
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeJV(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeJV(d *json.Decoder) (*jv, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jv{kind: 'o'}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				c, err := decodeJV(d)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, k)
				v.vals = append(v.vals, c)
			}
			_, err := d.Token()
			return v, err
		case '[':
			v := &jv{kind: 'a'}
			for d.More() {
				c, err := decodeJV(d)
				if err != nil {
					return nil, err
				}
				v.vals = append(v.vals, c)
			}
			_, err := d.Token()
			return v, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &jv{kind: 's', s: t, f: &field{value: t}}, nil
	case json.Number:
		return &jv{kind: 'n', s: t.String(), f: &field{value: t.String()}}, nil
	case bool:
		return &jv{kind: 'b', s: strconv.FormatBool(t)}, nil
	case nil:
		return &jv{kind: 'z', s: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}

// leaves calls fn for every string and number with its dotted path, in
// document order; keys a dotted path cannot name are skipped.
func (v *jv) leaves(prefix []string, fn func(p []string, leaf *jv)) {
	switch v.kind {
	case 'o':
		for i, k := range v.keys {
			if k == "" || strings.ContainsAny(k, ". ") {
				continue
			}
			v.vals[i].leaves(append(prefix[:len(prefix):len(prefix)], k), fn)
		}
	case 'a':
		for i, c := range v.vals {
			c.leaves(append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)), fn)
		}
	case 's', 'n':
		fn(prefix, v)
	}
}

// numberTemplated reports whether a number leaf became a template: json:
// in a plan would send it as a string, so the body goes out raw instead.
func (v *jv) numberTemplated() bool {
	if v.kind == 'n' && v.f.tmpl != "" {
		return true
	}
	for _, c := range v.vals {
		if c.numberTemplated() {
			return true
		}
	}
	return false
}

func (v *jv) yamlNode() *yaml.Node {
	switch v.kind {
	case 'o':
		n := mapping()
		for i, k := range v.keys {
			n.Content = append(n.Content, str(litKey(k)), v.vals[i].yamlNode())
		}
		if len(v.keys) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case 'a':
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range v.vals {
			n.Content = append(n.Content, c.yamlNode())
		}
		if len(v.vals) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case 's':
		return str(v.f.text())
	case 'n':
		tag := "!!int"
		if strings.ContainsAny(v.s, ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.s}
	case 'b':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v.s}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// rawJSON writes the body compact, numbers that became templates unquoted.
func (v *jv) rawJSON(b *strings.Builder) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.WriteString(lit(string(kb)))
			b.WriteByte(':')
			v.vals[i].rawJSON(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, c := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			c.rawJSON(b)
		}
		b.WriteByte(']')
	case 's':
		switch {
		case v.f.expr != "":
			// A body: template is sent as it renders: toJSON quotes and
			// escapes the value, whatever the server handed out.
			b.WriteString("{{ toJSON(" + v.f.expr + ") }}")
		case v.f.tmpl != "":
			b.WriteString(`"` + v.f.tmpl + `"`)
		default:
			sb, _ := json.Marshal(v.s)
			b.WriteString(lit(string(sb)))
		}
	case 'n':
		if v.f.tmpl != "" {
			b.WriteString(v.f.tmpl)
		} else {
			b.WriteString(v.s)
		}
	default:
		b.WriteString(v.s)
	}
}
