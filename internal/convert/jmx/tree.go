package jmx

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// xnode is any XML element, kept whole: a .jmx is XStream's rendering of
// JMeter's test tree, and the properties an element has depend on its
// class, so a fixed schema would drop what it did not foresee.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []xnode    `xml:",any"`
}

func (n *xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// elem is one test element of the tree: its class, its name, its
// properties by name, and the elements under it (the hashTree that follows
// it in the file).
type elem struct {
	class    string
	name     string
	enabled  bool
	props    map[string]*xnode
	children []*elem
	path     string
}

// prop is a property's text ("" when absent): stringProp, boolProp,
// intProp and longProp all hold their value as text.
func (e *elem) prop(name string) string {
	if n := e.props[name]; n != nil {
		return strings.TrimSpace(n.Text)
	}
	return ""
}

// rawProp is a property's text untrimmed: a raw body keeps its spacing.
func (e *elem) rawProp(name string) string {
	if n := e.props[name]; n != nil {
		return n.Text
	}
	return ""
}

func (e *elem) boolProp(name string, def bool) bool {
	switch strings.ToLower(e.prop(name)) {
	case "true":
		return true
	case "false":
		return false
	}
	return def
}

// where names the element for the list of what was not converted:
// TestPlan/Thread Group/If Controller "x".
func (e *elem) where() string { return e.path }

// parseTree reads a .jmx file into its test elements: the TestPlan and
// what lies under it.
func parseTree(data []byte) (*elem, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	dec := xml.NewDecoder(bytes.NewReader(data))
	// JMeter writes UTF-8, but older files say ISO-8859-1 or nothing at all.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var root xnode
	if err := dec.Decode(&root); err != nil {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not a JMeter test plan: XML error at line %d: %s", se.Line, se.Msg)
		}
		return nil, fmt.Errorf("not a JMeter test plan: %v", err)
	}
	if root.XMLName.Local != "jmeterTestPlan" {
		return nil, fmt.Errorf("not a JMeter test plan: the root element is <%s>, expected <jmeterTestPlan>", root.XMLName.Local)
	}
	var top *xnode
	for i := range root.Nodes {
		if root.Nodes[i].XMLName.Local == "hashTree" {
			top = &root.Nodes[i]
			break
		}
	}
	if top == nil {
		return nil, errors.New("not a JMeter test plan: no <hashTree> under <jmeterTestPlan>")
	}
	list := elements(top, "")
	if len(list) == 0 || list[0].class != "TestPlan" {
		return nil, errors.New("not a JMeter test plan: no TestPlan element")
	}
	return list[0], nil
}

// elements reads a hashTree: each element is followed by the hashTree of
// its children.
func elements(tree *xnode, parent string) []*elem {
	var out []*elem
	for i := range tree.Nodes {
		n := &tree.Nodes[i]
		if n.XMLName.Local == "hashTree" {
			if len(out) > 0 {
				last := out[len(out)-1]
				last.children = append(last.children, elements(n, last.path)...)
			}
			continue
		}
		out = append(out, newElem(n, parent))
	}
	return out
}

func newElem(n *xnode, parent string) *elem {
	e := &elem{
		class:   n.attr("testclass"),
		name:    n.attr("testname"),
		enabled: n.attr("enabled") != "false",
		props:   map[string]*xnode{},
	}
	if e.class == "" {
		e.class = n.XMLName.Local
	}
	for i := range n.Nodes {
		p := &n.Nodes[i]
		if name := p.attr("name"); name != "" {
			e.props[name] = p
		}
	}
	label := e.class
	if i := strings.LastIndexByte(label, '.'); i >= 0 {
		label = label[i+1:]
	}
	switch {
	case parent == "":
		e.path = "TestPlan"
	case e.name == "" || e.name == label:
		e.path = parent + "/" + label
	default:
		e.path = fmt.Sprintf("%s/%s %q", parent, label, e.name)
	}
	return e
}

// arguments are the name/value pairs of an Arguments element property
// (user-defined variables, a sampler's parameters).
type argument struct {
	name, value string
	encode      bool
}

func (e *elem) arguments(prop string) []argument {
	n := e.props[prop]
	if n == nil {
		return nil
	}
	var out []argument
	for i := range n.Nodes {
		c := &n.Nodes[i]
		if n.XMLName.Local == "collectionProp" {
			// A standalone Arguments element holds the collection itself.
			c = n
		} else if c.XMLName.Local != "collectionProp" {
			continue
		}
		for j := range c.Nodes {
			a := &c.Nodes[j]
			if a.XMLName.Local != "elementProp" {
				continue
			}
			sub := newElem(a, "x")
			out = append(out, argument{
				name:   sub.prop("Argument.name"),
				value:  sub.rawProp("Argument.value"),
				encode: sub.boolProp("HTTPArgument.always_encode", false),
			})
		}
		if c == n {
			break
		}
	}
	return out
}

// collection is the text of a collectionProp's string items, or of its
// elementProps as sub-elements.
func (e *elem) collection(prop string) []*xnode {
	n := e.props[prop]
	if n == nil {
		return nil
	}
	out := make([]*xnode, 0, len(n.Nodes))
	for i := range n.Nodes {
		out = append(out, &n.Nodes[i])
	}
	return out
}
