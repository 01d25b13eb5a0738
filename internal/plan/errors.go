package plan

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/suggest"
)

// String formats a position the way editors and compilers do, so a user can
// jump to it: file:line:col.
func (p Pos) String() string {
	line, col := p.Line, p.Col
	if line < 1 {
		line = 1
	}
	if col < 1 {
		col = 1
	}
	return p.File + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

// Problem is one thing wrong with a plan.
type Problem struct {
	Pos Pos
	Msg string
}

func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// Error is every problem found in a plan. Loading goes on after the first
// problem where it can, so a user fixes a plan in one pass instead of one
// error per run.
type Error struct {
	Problems []Problem
}

// Error prints one problem per line as file:line:col: message.
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// sortProblems orders problems as they appear in the file, which is the
// order a user reads and fixes them in. Problems in other files (none so far)
// keep their relative order after the plan's own.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].Pos, ps[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// maxLineSearch bounds the prefix search of yamlLine; it parses up to that
// many prefixes, which is instant for plan-sized files.
const maxLineSearch = 2000

// yamlProblems turns a yaml.v3 syntax error into our format. yaml.v3 knows
// only a line, sometimes not even that, and for parser errors it reports the
// line of the enclosing construct counted from 0.
func yamlProblems(file string, src []byte, err error) []Problem {
	line, msg := 0, strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if l := yamlLine(src, msg); l > 0 {
		line = l
	}
	return []Problem{{Pos: Pos{File: file, Line: max(line, 1), Col: 1}, Msg: "invalid YAML: " + msg}}
}

// yamlLine finds the first line at which the text read so far already
// fails with the same message: the line where the problem is. It returns 0
// when no prefix reproduces the message.
func yamlLine(src []byte, msg string) int {
	n := bytes.Count(src, []byte("\n")) + 1
	if n > maxLineSearch {
		return 0
	}
	end := 0
	for line := 1; line <= n; line++ {
		if i := bytes.IndexByte(src[end:], '\n'); i >= 0 {
			end += i + 1
		} else {
			end = len(src)
		}
		var doc yaml.Node
		err := yaml.Unmarshal(src[:end], &doc)
		if err == nil {
			continue
		}
		got := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			got = m[2]
		}
		if got == msg {
			return line
		}
	}
	return 0
}

// Suggest picks the valid key a user most likely meant: the closest within
// two edits, or else one that the key is a prefix of (or the other way
// round), since people abbreviate and pluralise. "" when none is close.
func Suggest(key string, valid []string) string { return suggest.Key(key, valid) }
