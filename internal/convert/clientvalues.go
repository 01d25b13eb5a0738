package convert

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Values the client made rather than the server handed out: UUIDs it
// generated (an idempotency key, the id of a new object, a request id),
// which a plan must make afresh each iteration, or every user after the
// first sends one that already exists.

// uuidAnyRE finds UUIDs inside a longer value ("order-<uuid>", a path).
var uuidAnyRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// maxSharedUUIDs bounds the UUIDs a plan makes once per iteration and
// sends several times: each one nests the rest of the iteration in a
// for_each, and a plan nested deeper is hard to read.
const maxSharedUUIDs = 4

// clientUUIDs makes the plan's client-made UUIDs: one sent once becomes
// {{ uuid }}; one sent several times (the id of an object created, then
// read back) is drawn once per iteration by a for_each over [uuid()] that
// holds the rest of the iteration, and each use reads it by name.
type clientUUIDs struct {
	c     *correlator
	uses  map[string]int    // each UUID's occurrences over every request's fields
	named map[string]string // a UUID sent several times: its name
	seen  map[string]bool   // reported in Summary.Generated
	// dropped are UUIDs sent several times past maxSharedUUIDs: left as
	// recorded.
	dropped map[string]bool
	// handed maps a UUID an earlier response held to the template that
	// sends it back ("": left as recorded, noted) (clientvalues_handed.go).
	handed   map[string]string
	pos      map[*step]int
	firstURL map[string]*step
}

func newClientUUIDs(c *correlator, steps []*step) *clientUUIDs {
	u := &clientUUIDs{c: c, uses: map[string]int{}, named: map[string]string{}, seen: map[string]bool{}, dropped: map[string]bool{},
		handed: map[string]string{}, pos: map[*step]int{}, firstURL: firstURLs(steps)}
	for i, st := range steps {
		u.pos[st] = i
		for _, f := range st.fields() {
			for _, m := range uuidAnyRE.FindAllString(f.value, -1) {
				u.uses[strings.ToLower(m)]++
			}
		}
		if st.raw != nil {
			for _, m := range uuidAnyRE.FindAllString(st.raw.value, -1) {
				u.uses[strings.ToLower(m)]++
			}
		}
	}
	return u
}

// template turns the UUIDs in v into templates: one an earlier response
// held into its capture, one the client made into a fresh one; ok is false
// when v has none, or one that stays as recorded.
func (u *clientUUIDs) template(st *step, v string, quoteSafe bool) (string, bool) {
	locs := uuidAnyRE.FindAllStringIndex(v, -1)
	if len(locs) == 0 {
		return "", false
	}
	if !quoteSafe && strings.ContainsAny(v, `"\`) {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		ref, ok := u.uuidRef(st, v[l[0]:l[1]])
		if !ok {
			return "", false
		}
		b.WriteString(lit(v[last:l[0]]))
		b.WriteString(ref)
		last = l[1]
	}
	b.WriteString(lit(v[last:]))
	return b.String(), true
}

// uuidRef is how the plan sends UUID m at st: read from the response that
// handed it out, or made afresh when nothing says the server knows it.
func (u *clientUUIDs) uuidRef(st *step, m string) (string, bool) {
	if ref, found, ok := u.handedRef(st, m); found {
		return ref, ok
	}
	if why := u.unsure(st, m); why != "" {
		u.noteUnsure(st, m, why)
		return "", false
	}
	ref, ok := u.ref(st, strings.ToLower(m))
	if ok && !u.seen[m] {
		u.seen[m] = true
		u.c.s.Generated = append(u.c.s.Generated, fmt.Sprintf("%s in %s %s", m, st.x.method, st.x.u.Path))
	}
	return ref, ok
}

// ref is how the plan writes UUID m at st: {{ uuid }}, or the name of the
// one drawn for the iteration, introduced at its first use.
func (u *clientUUIDs) ref(st *step, m string) (string, bool) {
	if u.uses[m] <= 1 {
		return "{{ uuid }}", true
	}
	if name, ok := u.named[m]; ok {
		return "{{ " + name + " }}", true
	}
	if u.dropped[m] || len(u.named) >= maxSharedUUIDs {
		if !u.dropped[m] {
			u.dropped[m] = true
			u.c.s.Notes = append(u.c.s.Notes, fmt.Sprintf("%s %s: the client-made UUID %s, sent %d times, is left as recorded: the plan already draws %d per iteration (every user sends this one as it is)", st.x.method, st.x.u.Path, m, u.uses[m], maxSharedUUIDs))
		}
		return "", false
	}
	name := "client_uuid"
	for n := 1; ; n++ {
		if !u.c.names[name+strconv.Itoa(n)] {
			name += strconv.Itoa(n)
			break
		}
	}
	u.c.names[name] = true
	u.named[m] = name
	st.draws = append(st.draws, name)
	return "{{ " + name + " }}", true
}

// field templates f's client-made UUIDs, once nothing else templated it.
func (u *clientUUIDs) field(st *step, f *field, jsonLeaf bool) {
	if f.tmpl != "" {
		return
	}
	if t, ok := u.template(st, f.value, !jsonLeaf); ok {
		f.tmpl = t
	}
}

// raw templates the client-made UUIDs of a raw body whose server-handed
// values were not templated.
func (u *clientUUIDs) raw(st *step) {
	if st.raw == nil || st.raw.tmpl != "" {
		return
	}
	if t, ok := u.template(st, st.raw.value, true); ok {
		st.raw.tmpl = t
	}
}

// draw is a UUID drawn once per iteration: its name, and where in the
// scenario's list of steps it is first sent.
type draw struct {
	at   int
	name string
}

// wrapDraws nests the steps from each draw's first use to the end in a
// for_each over one fresh UUID, named by its as:. The last draw is wrapped
// first, so an earlier draw's for_each holds the later one's.
func wrapDraws(list []*yaml.Node, draws []draw) []*yaml.Node {
	for k := len(draws) - 1; k >= 0; k-- {
		d := draws[k]
		body := append([]*yaml.Node{}, list[d.at:]...)
		each := mapping(str("for_each"), str("[uuid()]"), str("as"), str(d.name),
			str("steps"), &yaml.Node{Kind: yaml.SequenceNode, Content: body})
		list = append(list[:d.at:d.at], each)
	}
	return list
}

// uniqueFieldWords name fields whose value a server usually holds unique:
// a sign-up's user name or e-mail, an object's slug.
var uniqueFieldWords = []string{"username", "user_name", "login", "email", "slug"}

// varyingValues notes what the recording typed that one user cannot send
// for all: a field of one request sent with different values across the
// recording (what each user types: a data column's job), and a user name,
// e-mail or slug a create request sends, the same for every iteration.
func varyingValues(steps []*step, s *Summary) {
	type seen struct {
		where  string
		values []string
	}
	byField := map[string]*seen{}
	var order []string
	for _, st := range steps {
		where := st.x.method + " " + st.url()
		for name, f := range st.typedFields() {
			if f.tmpl != "" {
				continue
			}
			key := where + "\x00" + name
			e := byField[key]
			if e == nil {
				e = &seen{where: where}
				byField[key] = e
				order = append(order, key)
			}
			if !slices.Contains(e.values, f.value) {
				e.values = append(e.values, f.value)
			}
		}
	}
	for _, key := range order {
		e := byField[key]
		_, name, _ := strings.Cut(key, "\x00")
		switch {
		case len(e.values) > 1:
			s.Notes = append(s.Notes, fmt.Sprintf("%s: field %s was sent with %d different values (%s): what each user types; a data source column ({{ data.SOURCE.%s }}) sends one per iteration", litKey(e.where), name, len(e.values), quoteList(e.values, 3), ident(name)))
		case !strings.HasPrefix(e.where, "GET ") && !strings.HasPrefix(e.where, "HEAD ") && uniqueField(name):
			s.Notes = append(s.Notes, fmt.Sprintf("%s: field %s sends %q for every user and iteration; if the server holds it unique, put {{ uuid }} in it or read it from a data source", litKey(e.where), name, e.values[0]))
		}
	}
}

// typedFields are the fields of a request's body and query a person could
// have typed, by name (a JSON leaf by its dotted path).
func (st *step) typedFields() map[string]*field {
	out := map[string]*field{}
	for _, q := range st.query {
		out[q.rawName] = q.f
	}
	for _, ff := range st.form {
		out[ff.name] = ff.f
	}
	if st.json != nil {
		st.json.leaves(nil, func(p []string, l *jv) {
			if l.kind == 's' {
				out[strings.Join(p, ".")] = l.f
			}
		})
	}
	return out
}

func uniqueField(name string) bool {
	n := strings.ToLower(name)
	for _, w := range uniqueFieldWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func quoteList(vs []string, max int) string {
	q := make([]string, 0, max+1)
	for i, v := range vs {
		if i == max {
			q = append(q, "...")
			break
		}
		q = append(q, strconv.Quote(v))
	}
	return strings.Join(q, ", ")
}
