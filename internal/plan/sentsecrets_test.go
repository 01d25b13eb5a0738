package plan

import (
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// What the run sends in a credential header is hidden from then on, with
// the parts a server echoes alone, in the forms messages carry them.
func TestSentSecretsAreRedacted(t *testing.T) {
	p := mustParse(t, "target: http://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n", nil)
	token := "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig-123/+="
	p.NoteSecretHeader("Authorization", "Bearer "+token)
	p.NoteSecretHeader("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("ann:pa55word")))
	p.NoteSecretHeader("Set-Cookie", "sid=cookie-value-9; Path=/; HttpOnly")
	p.NoteSecretHeader("Cookie", "a=first-cookie; b=second-cookie")
	p.NoteSecret("captured-token-7")
	p.NoteSecret("ampX&secret<9>")
	for _, msg := range []string{
		"500 Internal Server Error: " + token,
		`{"headers":{"authorization":"Bearer ` + token + `"}}`,
		"GET /x?t=" + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(token, "/", "%2F"), "+", "%2B"), "=", "%3D"),
		"password was pa55word",
		"sid=cookie-value-9",
		"cookies first-cookie and second-cookie",
		"captured captured-token-7 here",
		"cut inside: captured-tok…",
		// JSON encoders' own escapes: PHP's "\/", ASP.NET's upper-case \u
		// (base64's '+'), Go's lower-case \u for < > &.
		`{"authorization":"Bearer ` + strings.ReplaceAll(token, "/", `\/`) + `"}`,
		`{"authorization":"Bearer ` + strings.ReplaceAll(token, "+", `\u002B`) + `"}`,
		`{"echo":"ampX\u0026secret\u003c9\u003e"}`,
		`{"echo":"ampX\u0026secret\u003C9\u003E"}`,
		"cut inside: Bearer " + strings.ReplaceAll(token, "/", `\/`)[:39] + "…",
	} {
		got := p.Redact(msg)
		for _, s := range []string{"eyJhbGci", "pa55word", "cookie-value", "first-cookie", "second-cookie", "captured-tok", "ampX"} {
			if strings.Contains(got, s) {
				t.Errorf("Redact(%q) = %q: %s shows", msg, got, s)
			}
		}
		if !strings.Contains(got, Redacted) {
			t.Errorf("Redact(%q) = %q: nothing hidden", msg, got)
		}
	}
	p.NoteSecretHeader("Set-Cookie", "dark=true; Path=/")
	if got := p.Redact(`nothing secret here: {"ok":true}`); got != `nothing secret here: {"ok":true}` {
		t.Errorf("a clean message changed: %q", got)
	}
}

// Noting and redacting from many goroutines is safe, and a generation
// full of values starts a new one without losing the newest.
func TestSentSecretsConcurrentAndBounded(t *testing.T) {
	p := mustParse(t, "target: http://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n", nil)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				v := "tok-" + string(rune('a'+g)) + "-" + strings.Repeat("x", i%7) + "-" + strconv.Itoa(i)
				p.NoteSecret(v)
				if got := p.Redact("echo " + v); strings.Contains(got, v) {
					t.Errorf("%q not hidden: %q", v, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.sent.limit = 100
	for i := 0; i < 250; i++ {
		p.NoteSecret("rotating-" + strconv.Itoa(i))
	}
	last := "rotating-" + strconv.Itoa(249)
	if got := p.Redact(last); got != Redacted {
		t.Errorf("the newest value is not hidden after a rotation: %q", got)
	}
}
