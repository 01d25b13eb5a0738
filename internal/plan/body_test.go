package plan

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// bodyFiles is an opener for fuzzing and tests: every path opens the same
// small file, so the body syntax is exercised without the file system.
func bodyFiles(string) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("file \x00 content\r\n--x")), nil
}

// FuzzParseBodiesThink fuzzes the syntax of think distributions, body
// files, multipart, gzip, http.version and script steps (whose
// JavaScript is compiled at load): any plan that loads renders
// its bodies, gzip bodies finished at load decompress, and think draws
// stay within zero and their cap.
func FuzzParseBodiesThink(f *testing.F) {
	for _, s := range []string{
		"{get: /}, {think: {exponential: 2s}}",
		"{get: /}, {think: {normal: 2s, sd: 1s, max: 3s}}",
		"{get: /}, {think: {lognormal: 1ms, sd: 10s}}",
		"{post: /, body_file: a.bin, gzip: true}",
		"{post: /, json: {a: '{{ iter }}'}, gzip: true}",
		"{post: /, multipart: {t: 'x{{ vu }}', f: {file: a.png}, m: {value: v, content_type: text/plain}}}",
		"{post: /, multipart: {f: {file: a, filename: b, content_type: c/d}}, gzip: true}",
		"{get: /}, {script: 'set(\"a\", response.body)', sets: [a]}, {get: '/{{ a }}'}",
		"{get: /}, {name: s, script: \"const x = `${captures.a}`;\\nfail(x)\"}",
	} {
		f.Add("target: demo\nhttp: {version: h2c}\nscenarios: {s: {steps: [" + s + "]}}\nload: {stages: [{duration: 1s, users: 1}]}\n")
	}
	for _, pace := range []string{"{exponential: 2s, max: 5s}", "{normal: 1s, sd: 2s}", "{lognormal: 1ms, sd: 1s}"} {
		f.Add("target: demo\nscenarios: {s: {steps: [{get: /}]}}\nload: {pace: " + pace + ", stages: [{duration: 1s, users: 1}]}\n")
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := parse("fuzz.yaml", []byte(src), fixtureEnv, bodyFiles)
		if (p == nil) == (err == nil) {
			t.Fatalf("want exactly one of plan and error, got %v and %v", p, err)
		}
		if err != nil {
			return
		}
		r := rand.New(rand.NewPCG(1, 2))
		env := &Env{Captures: make([]string, 8), Rows: make([][]string, len(p.Data)), Rand: r}
		for _, s := range p.Scenarios {
			for _, st := range s.Steps {
				st.Body.String(env)
				if st.StaticBody != nil && st.Body != nil {
					t.Fatal("a step with both a static and a templated body")
				}
				if st.StaticBody != nil && hasHeader(st, "Content-Encoding") {
					zr, err := gzip.NewReader(bytes.NewReader(st.StaticBody))
					if err != nil {
						t.Fatalf("static gzip body: %v", err)
					}
					if _, err := io.ReadAll(zr); err != nil {
						t.Fatalf("static gzip body: %v", err)
					}
				}
				if d := st.Dist; d != nil {
					for i := 0; i < 10; i++ {
						if v := d.Draw(r); v < 0 || d.Max > 0 && v > d.Max {
							t.Fatalf("draw %v outside [0, %v]", v, d.Max)
						}
					}
				}
			}
		}
		if d := p.Load.PaceDist; d != nil {
			if p.Load.Pace != d.Mean || d.Mean <= 0 {
				t.Fatalf("pace %v, distribution mean %v", p.Load.Pace, d.Mean)
			}
			for i := 0; i < 10; i++ {
				if v := d.Draw(r); v < 0 || d.Max > 0 && v > d.Max {
					t.Fatalf("pace draw %v outside [0, %v]", v, d.Max)
				}
			}
		}
	})
}

func hasHeader(st *Step, name string) bool {
	for _, h := range st.Headers {
		if strings.EqualFold(h.Name, name) {
			return true
		}
	}
	return false
}
