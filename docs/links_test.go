// Package docs holds the tests that keep the documentation true to the
// code: local links and anchors resolve, the architecture's package table
// matches `go list`, and the generated reference pages match what the
// parser and the result types say today.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The Markdown files that make up the documentation, relative to the
// repository root. Files under test-output/ and bench/.bin are build
// output, not documentation.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != ".." && (strings.HasPrefix(name, ".") || name == "test-output" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files from the repository root: %v", len(files), files)
	}
	return files
}

var (
	linkRE       = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// proseLines returns a file's lines outside fenced code blocks, with
// inline code blanked out, so example text in code is not read as links.
func proseLines(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, "")
			continue
		}
		out = append(out, inlineCodeRE.ReplaceAllString(l, "``"))
	}
	return out
}

// anchors lists the ids GitHub gives a file's headings: lower case,
// punctuation dropped, spaces as hyphens, a repeated id suffixed -1, -2.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			ids[id+"-"+itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestLocalLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cache[path] = anchors(string(b))
		return cache[path]
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range proseLines(string(b)) {
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				if problem := checkLink(file, m[1], anchorsOf); problem != "" {
					t.Errorf("%s:%d: link %s: %s", file, i+1, m[1], problem)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d links: the link pattern no longer matches the docs", checked)
	}
}

func checkLink(file, target string, anchorsOf func(string) map[string]bool) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), path)
		info, err := os.Stat(dest)
		if err != nil {
			return "no such file"
		}
		if info.IsDir() {
			return ""
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	if !anchorsOf(dest)[anchor] {
		return "no heading with that anchor in " + dest
	}
	return ""
}
