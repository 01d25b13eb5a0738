package convert

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A UUID a request sends is the server's when any earlier response holds
// it anywhere in its text (a Location header, a HAL or HTML link, an id
// sent back in another case), not only as a whole value: made afresh,
// such an id names nothing on the server and every request with it 404s.

// handedRef is how the plan sends UUID m, which an earlier response than
// st's holds: a capture from that response, or ok false (left as recorded,
// with a note) when no capture reads it. found is false when no earlier
// response holds m.
func (u *clientUUIDs) handedRef(st *step, m string) (ref string, found, ok bool) {
	key := strings.ToLower(m)
	if ref, done := u.handed[key]; done {
		return ref, true, ref != ""
	}
	for i := u.pos[st] - 1; i >= 0; i-- {
		x := u.c.steps[i].x
		if ref, hit := u.fromHeaders(i, x, m); hit {
			return u.keep(st, key, ref, i), true, ref != ""
		}
		if ref, hit := u.fromBody(i, x, m); hit {
			return u.keep(st, key, ref, i), true, ref != ""
		}
	}
	return "", false, false
}

// keep remembers m's reference; an empty one is left as recorded, noted.
func (u *clientUUIDs) keep(st *step, key, ref string, from int) string {
	u.handed[key] = ref
	if ref == "" {
		fx := u.c.steps[from].x
		u.c.s.Notes = append(u.c.s.Notes, fmt.Sprintf("%s %s: the UUID %s was handed out by %s %s and is left as recorded: no capture reads it from there; capture it by hand", st.x.method, st.x.u.Path, key, fx.method, fx.u.Path))
	}
	return ref
}

// fromHeaders reads m from a header of response i: a header capture, the
// UUID cut out of it when the header holds more (a Location's path).
func (u *clientUUIDs) fromHeaders(i int, x *exchange, m string) (string, bool) {
	for k, h := range x.respHeaders {
		at := indexFold(h.value, m)
		if at < 0 {
			continue
		}
		if strings.EqualFold(h.name, "Set-Cookie") || !firstHeader(x.respHeaders, k) {
			return "", true
		}
		name := u.c.capture(i, "header", h.name, strings.ToLower(h.name))
		expr := name
		if pre := h.value[:at]; pre != "" {
			expr = "trimPrefix(" + expr + ", " + exprString(pre) + ")"
		}
		if suf := h.value[at+len(m):]; suf != "" {
			expr = "trimSuffix(" + expr + ", " + exprString(suf) + ")"
		}
		return caseRef(expr, h.value[at:at+len(m)], m), true
	}
	return "", false
}

// fromBody reads m from response i's body: its JSON field when the body
// hands it out whole, else a regex on the text just before it.
func (u *clientUUIDs) fromBody(i int, x *exchange, m string) (string, bool) {
	body := x.respBody
	if !utf8.Valid(body) {
		return "", false
	}
	at := indexFold(string(body), m)
	if at < 0 {
		return "", false
	}
	occ := string(body[at : at+len(m)])
	if src, ok := u.c.ix.lookup(occ); ok && src.step == i {
		return caseRef(u.c.capture(i, src.kind, src.expr, src.hint), occ, m), true
	}
	re, hint, ok := regexForClass(string(body), occ, uuidClass)
	if !ok {
		return "", true
	}
	if hint == "" {
		hint = "uuid"
	}
	return caseRef(u.c.capture(i, "regex", re, hint+"_uuid"), occ, m), true
}

// uuidClass is what a regex capture of a UUID accepts: the UUID alone,
// never the path or text that follows it.
const uuidClass = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

// caseRef is the template that sends expr's value as the request sent
// it: the response's D00DFEED-... sent back as d00dfeed-..., or "" when the
// request mixed the cases in a way no function repeats.
func caseRef(expr, handed, sent string) string {
	switch sent {
	case handed:
		return "{{ " + expr + " }}"
	case strings.ToLower(handed):
		return "{{ lower(" + expr + ") }}"
	case strings.ToUpper(handed):
		return "{{ upper(" + expr + ") }}"
	}
	return ""
}

func firstHeader(hs []kv, k int) bool {
	for _, h := range hs[:k] {
		if strings.EqualFold(h.name, hs[k].name) {
			return false
		}
	}
	return true
}

// exprString quotes s as an expression's string literal.
func exprString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + `"`
}

// indexFold is strings.Index of the ASCII m in s, ignoring ASCII case, at
// a byte offset of s itself.
func indexFold(s, m string) int {
	return strings.Index(lowerASCII(s), strings.ToLower(m))
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// unsure says why UUID m, which no earlier response holds, may still be
// the server's: it is first sent in a GET, HEAD or DELETE URL (which names
// something that exists), or an earlier response's body was not recorded.
func (u *clientUUIDs) unsure(st *step, m string) string {
	for i := u.pos[st] - 1; i >= 0; i-- {
		if x := u.c.steps[i].x; x.respUnrecorded {
			return fmt.Sprintf("the body of %s %s, an earlier response, was not recorded and may have handed it out", x.method, x.u.Path)
		}
	}
	if first, ok := u.firstURL[strings.ToLower(m)]; ok && first == st {
		return "it is first sent in the URL of a " + st.x.method + ", which names something that already exists"
	}
	return ""
}

// noteUnsure leaves m as recorded with a note saying why; handedRef then
// keeps it so at every later use.
func (u *clientUUIDs) noteUnsure(st *step, m, why string) {
	key := strings.ToLower(m)
	u.handed[key] = ""
	u.c.s.Notes = append(u.c.s.Notes, fmt.Sprintf("%s %s: the UUID %s is left as recorded, not made afresh: %s; capture it, or put {{ uuid }} in if the client makes it", st.x.method, st.x.u.Path, key, why))
}

// firstURLs maps each UUID first sent in a GET, HEAD or DELETE URL to
// that step.
func firstURLs(steps []*step) map[string]*step {
	first := map[string]*step{}
	seen := map[string]bool{}
	for _, st := range steps {
		inURL := map[string]bool{}
		for _, f := range st.segs {
			for _, m := range uuidAnyRE.FindAllString(f.value, -1) {
				inURL[strings.ToLower(m)] = true
			}
		}
		for _, q := range st.query {
			for _, m := range uuidAnyRE.FindAllString(q.f.value, -1) {
				inURL[strings.ToLower(m)] = true
			}
		}
		for _, f := range st.fields() {
			for _, m := range uuidAnyRE.FindAllString(f.value, -1) {
				key := strings.ToLower(m)
				if seen[key] {
					continue
				}
				seen[key] = true
				switch st.x.method {
				case "GET", "HEAD", "DELETE":
					if inURL[key] {
						first[key] = st
					}
				}
			}
		}
	}
	return first
}
