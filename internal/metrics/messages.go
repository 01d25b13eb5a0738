package metrics

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// MaxMessage bounds a failure message in bytes: a long error text or body
// is cut there (with "…"), so a table entry's size is bounded too.
const MaxMessage = 512

// BodySnippet is how much of a failed answer's body goes into its message:
// enough for an error object or a page title, not a whole page.
const BodySnippet = 200

// msgEntry is one distinct message in a shard's table of a step.
type msgEntry struct {
	class  sample.Class
	status int
	msg    string // redacted, as reports show it
	count  int64
	seen   uint64 // the table's tick when last counted
}

// msgTable counts a step's distinct failure messages in one shard. It
// holds at most cap entries: when a new message finds it full, the least
// counted entry (the least recently seen among equals) leaves, its count
// going to other, so memory stays bounded however many distinct texts a
// run produces, while messages that keep coming keep their place. The
// counts of a message are exact from when it entered; every failure is in
// exactly one entry or in other, so each class sums exactly.
type msgTable struct {
	m     map[string]*msgEntry
	other [sample.NumClasses]int64
	tick  uint64
}

// StepBudget bounds the memory of a step's message tables, all shards
// together, however long the run and however many distinct messages.
const StepBudget = 1 << 20

// maxEntryBytes is the most one table entry can hold: its key (a message
// of MaxMessage bytes and a 3-byte prefix), a redacted copy of the text,
// and the map slot, entry and string headers.
const maxEntryBytes = 3 + 2*MaxMessage + 160

// tableCap is how many entries each of shards tables of a step holds for
// a run that reports the top n messages: twice n, so the messages
// competing for the last places are still counted when the report cuts,
// but never so many that the step's tables could pass StepBudget.
func tableCap(n, shards int) int {
	return max(min(2*n, StepBudget/(shards*maxEntryBytes)), 4)
}

// appendKey encodes a message's identity: class, status and raw text.
func appendKey(dst []byte, class sample.Class, status int, msg []byte) []byte {
	dst = append(dst, byte(class), byte(status>>8), byte(status))
	return append(dst, msg...)
}

// count adds n failures with this message. key is appendKey's encoding;
// the lookup does not allocate, so a repeated message costs no garbage.
// It must be called under the shard's lock.
func (t *msgTable) count(key []byte, class sample.Class, status int, msg []byte, n int64, limit int, redact func(string) string) {
	t.tick++
	if e, ok := t.m[string(key)]; ok {
		e.count += n
		e.seen = t.tick
		return
	}
	var e *msgEntry
	if len(t.m) >= limit {
		var victim string
		for k, c := range t.m {
			if e == nil || c.count < e.count || (c.count == e.count && c.seen < e.seen) {
				e, victim = c, k
			}
		}
		t.other[e.class] += e.count
		delete(t.m, victim)
	} else {
		e = new(msgEntry)
	}
	// The text shares the key's bytes unless redaction changed it.
	ks := string(key)
	text := ks[len(key)-len(msg):]
	if redact != nil {
		text = redact(text)
	}
	*e = msgEntry{class: class, status: status, msg: text, count: n, seen: t.tick}
	t.m[ks] = e
}

// defaultMessage is what a failure without a message of its own says.
func defaultMessage(class sample.Class) string {
	switch class {
	case sample.Dropped:
		return "arrival dropped: every max_in_flight slot was busy (the target or the generator could not keep up)"
	case sample.Interrupted:
		return "cut off when the run ended"
	}
	return "no detail"
}

// combine merges the tables of one step across shards into the step's
// kept messages and other counts.
func combine(top int, tables []*msgTable) ([]result.StepError, map[string]int64) {
	var list []result.StepError
	others := map[string]int64{}
	for _, t := range tables {
		for _, e := range t.m {
			list = append(list, result.StepError{Class: e.class.String(), Status: e.status, Message: e.msg, Count: e.count})
		}
		for c, n := range t.other {
			if n > 0 {
				others[sample.Class(c).String()] += n
			}
		}
	}
	return result.CombineErrors(top, [][]result.StepError{list}, []map[string]int64{others})
}

// AppendBody appends the start of a response body as a message: like
// appendText, but an HTML page (by its content type or its first byte)
// loses its markup, so "503 Service Unavailable" shows the page's words
// rather than "<!DOCTYPE html><html><head>".
func AppendBody(dst []byte, body, contentType []byte) []byte {
	html := bytes.Contains(contentType, []byte("html"))
	if !html && len(contentType) == 0 {
		t := bytes.TrimSpace(body)
		html = len(t) > 0 && t[0] == '<'
	}
	return appendText(dst, body, BodySnippet, html)
}

// textWriter turns runes into a one-line message: control characters and
// runs of white space become one space, invalid UTF-8 becomes U+FFFD, and
// it stops at max bytes with "…".
type textWriter struct {
	dst        []byte
	start, max int
	space      bool // the last thing written was a space (or nothing yet)
	inTag      bool
	strip      bool
	full       bool
}

func (w *textWriter) rune(r rune) {
	if w.full {
		return
	}
	if w.strip {
		if w.inTag {
			w.inTag = r != '>'
			if !w.inTag {
				w.blank()
			}
			return
		}
		if r == '<' {
			w.inTag = true
			return
		}
	}
	if r < 0x20 || r == 0x7f || r == ' ' || (r >= 0x80 && r < 0xa0) {
		w.blank()
		return
	}
	if len(w.dst)-w.start+utf8.RuneLen(r) > w.max {
		w.dst = append(w.dst, "…"...)
		w.full = true
		return
	}
	w.dst = utf8.AppendRune(w.dst, r)
	w.space = false
}

func (w *textWriter) blank() {
	if !w.space {
		w.dst = append(w.dst, ' ')
		w.space = true
	}
}

func (w *textWriter) end() []byte {
	if !w.full && w.space && len(w.dst) > w.start {
		w.dst = w.dst[:len(w.dst)-1]
	}
	return w.dst
}

func appendText(dst []byte, s []byte, max int, stripTags bool) []byte {
	w := textWriter{dst: dst, start: len(dst), max: max, space: true, strip: stripTags}
	for i := 0; i < len(s) && !w.full; {
		r, n := utf8.DecodeRune(s[i:])
		i += n
		w.rune(r)
	}
	return w.end()
}

func appendTextString(dst []byte, s string, max int) []byte {
	w := textWriter{dst: dst, start: len(dst), max: max, space: true}
	for _, r := range s {
		if w.full {
			break
		}
		w.rune(r)
	}
	return w.end()
}

// RedactURLCredentials hides the user information of URLs in a text
// ("https://user:pass@host" becomes "https://[redacted]@host"): transport errors
// quote the URL they failed on.
func RedactURLCredentials(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexAny(s, "/?# \"'")
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndexByte(s[:end], '@'); at >= 0 {
			b.WriteString(Redacted)
			s = s[at:]
		}
	}
}

// clone copies a table's entries, so a snapshot can combine them outside
// the shard's lock.
func (t *msgTable) clone() *msgTable {
	c := &msgTable{m: make(map[string]*msgEntry, len(t.m)), other: t.other}
	for k, e := range t.m {
		ce := *e
		c.m[k] = &ce
	}
	return c
}
