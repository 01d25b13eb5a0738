package report

import (
	"strings"
	"testing"
)

func TestMdCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"plain":           "`plain`",
		"a `b` c":         "``a `b` c``",
		"a ``b`` c":       "```a ``b`` c```",
		"`x`":             "`` `x` ``",
		"x`":              "`` x` ``",
		" x ":             "`  x  `",
		"  ":              "`  `",
		" x":              "` x`",
		"a\nb\r\nc":       "`a b c`",
		"<b> & &amp; a|b": "`<b> & &amp; a|b`",
		"":                "",
	} {
		got := mdCodeSpan(in)
		if got != want {
			t.Errorf("mdCodeSpan(%q) = %q, want %q", in, got, want)
		}
		if in == "" {
			continue
		}
		if back, ok := codeSpanText(got); !ok || back != strings.NewReplacer("\r\n", " ", "\n", " ").Replace(in) {
			t.Errorf("mdCodeSpan(%q) = %q reads %q", in, got, back)
		}
	}
}
