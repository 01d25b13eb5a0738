package jmx

import (
	"strconv"
	"strings"
)

// mode says where converted text goes: a template (a step's URL, headers,
// body), or plain text that only ${ENV} references reach (the target, the
// load's numbers).
type mode int

const (
	modeTemplate mode = iota
	modePlain
)

const lbraceRef = "{{ vars.stampede_lbrace }}"

// text converts JMeter text with ${var} and ${__function(...)} references
// into plan text: properties become ${ENV:-default} references, user
// variables their value, CSV columns and extracted values templates.
// What has no equivalent is kept literally (escaped so that the plan does
// not read it as an environment reference) and noted against where.
func (c *conv) text(s string, m mode, where string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(c.literal(s, m))
			return b.String()
		}
		end := refEnd(s, i)
		if end < 0 {
			b.WriteString(c.literal(s, m))
			return b.String()
		}
		b.WriteString(c.literal(s[:i], m))
		b.WriteString(c.ref(s[i+2:end], m, where))
		s = s[end+1:]
	}
}

// literal escapes text that is not a reference: "${" is written "$${",
// and "{{" in a template reads a var holding it (a template has no other
// escape).
func (c *conv) literal(s string, m mode) string {
	s = strings.ReplaceAll(s, "${", "$${")
	if m == modeTemplate && strings.Contains(s, "{{") {
		c.lbrace = true
		s = strings.ReplaceAll(s, "{{", lbraceRef)
	}
	return s
}

// refEnd is the index of the "}" closing the reference opened at i,
// nested references included, or -1.
func refEnd(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch {
		case strings.HasPrefix(s[j:], "${"):
			depth++
			j++
		case s[j] == '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func (c *conv) ref(inner string, m mode, where string) string {
	if strings.HasPrefix(inner, "__") {
		return c.function(inner, m, where)
	}
	name := strings.TrimSpace(inner)
	if v, ok := c.vars[name]; ok {
		return v
	}
	if m == modeTemplate {
		if p, ok := c.captures[name]; ok {
			return "{{ " + p + " }}"
		}
		if d, ok := c.columns[name]; ok {
			return "{{ data." + d + " }}"
		}
	}
	c.skip(where, "the variable ${"+inner+"} (no user variable, CSV column or extractor sets it here): kept as text")
	return "$${" + inner + "}"
}

func (c *conv) function(inner string, m mode, where string) string {
	fn, args := splitCall(inner)
	switch fn {
	case "__P", "__property":
		if len(args) > 0 && strings.TrimSpace(args[0]) != "" {
			return c.property(fn, args, where)
		}
	case "__env", "__BeanShell", "__groovy", "__GetSecret":
		if ref, ok := c.envFunction(fn, args); ok {
			return ref
		}
	case "__UUID":
		if m == modeTemplate {
			return "{{ uuid }}"
		}
	case "__threadNum":
		if m == modeTemplate {
			return "{{ vu }}"
		}
	case "__time":
		if m == modeTemplate && (len(args) == 0 || strings.TrimSpace(args[0]) == "") {
			return "{{ now_ms }}"
		}
	case "__Random":
		if m == modeTemplate && len(args) >= 2 {
			lo, e1 := strconv.ParseInt(strings.TrimSpace(args[0]), 10, 64)
			hi, e2 := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64)
			if e1 == nil && e2 == nil && lo <= hi {
				return "{{ rand_int(" + strconv.FormatInt(lo, 10) + ", " + strconv.FormatInt(hi, 10) + ") }}"
			}
		}
	}
	c.skip(where, "the function ${"+inner+"}: kept as text")
	return "$${" + inner + "}"
}

// property is ${__P(name,default)} or ${__property(name,var,default)} as
// an environment reference: JMeter's -Jname=value becomes NAME=value.
// __P's default is "1" and __property's the property's name, as in JMeter.
func (c *conv) property(fn string, args []string, where string) string {
	name := strings.TrimSpace(args[0])
	def := "1"
	// JMeter trims a function's arguments: ${__P(threads, 30)} is 30.
	switch {
	case fn == "__P" && len(args) > 1:
		def = strings.TrimSpace(args[1])
	case fn == "__property" && len(args) > 2:
		def = strings.TrimSpace(args[2])
	case fn == "__property":
		def = name
	}
	if strings.ContainsAny(def, "${}") {
		c.skip(where, "the default of ${"+fn+"("+strings.Join(args, ",")+")} (a reference): the property has no default")
		def = ""
	}
	env := envName(name)
	c.env[env] = def
	return "${" + env + ":-" + def + "}"
}

// splitCall splits "__name(a,b\,c)" into its name and arguments, commas
// escaped with a backslash or inside nested references kept.
func splitCall(inner string) (string, []string) {
	open := strings.IndexByte(inner, '(')
	if open < 0 || !strings.HasSuffix(inner, ")") {
		return strings.TrimSpace(inner), nil
	}
	fn, body := inner[:open], inner[open+1:len(inner)-1]
	var args []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(body); i++ {
		ch := body[i]
		switch {
		case ch == '\\' && i+1 < len(body) && body[i+1] == ',':
			cur.WriteByte(',')
			i++
		case ch == '$' && i+1 < len(body) && body[i+1] == '{':
			depth++
			cur.WriteByte(ch)
		case ch == '}' && depth > 0:
			depth--
			cur.WriteByte(ch)
		case ch == ',' && depth == 0:
			args = append(args, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(ch)
		}
	}
	args = append(args, cur.String())
	return fn, args
}

// envName makes a JMeter property name an environment variable's:
// letters, digits and _, in capitals (target.host → TARGET_HOST).
func envName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z':
			b.WriteByte(ch - 'a' + 'A')
		case 'A' <= ch && ch <= 'Z', ch == '_', '0' <= ch && ch <= '9' && i > 0:
			b.WriteByte(ch)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ident makes a JMeter variable name a plan name (a capture, a data
// source, a column): letters, digits and _, not starting with a digit.
func ident(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', ch == '_', '0' <= ch && ch <= '9' && i > 0:
			b.WriteByte(ch)
		case '0' <= ch && ch <= '9':
			b.WriteString("_" + string(ch))
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
