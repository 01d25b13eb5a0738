package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// curl's credentials become ${ENV} references in the plan: a literal
// password or token was written into the plan (and from there into every
// result's plan.source) as a Basic or Bearer header.
func TestCurlCredentialsBecomeEnvReferences(t *testing.T) {
	cases := []struct{ cmd, want, secret string }{
		{`curl -u "$SID:$TOKEN" https://api.test/x`, "target: https://${SID}:${TOKEN}@api.test", ""},
		{`curl -u alice:hunter22 https://api.test/x`, "target: https://alice:${CURL_PASSWORD}@api.test", "hunter22"},
		{`curl https://alice:hunter22@api.test/x`, "target: https://alice:${CURL_PASSWORD}@api.test", "hunter22"},
		{`curl --oauth2-bearer eyJtoken123 https://api.test/x`, "Authorization: Bearer ${CURL_TOKEN}", "eyJtoken123"},
		{`curl -H "Authorization: Bearer $API_TOKEN" -H "Cookie: sid=${SID}" https://api.test/x`, "Authorization: Bearer ${API_TOKEN}", ""},
	}
	for _, c := range cases {
		p, text, _ := curlPlan(t, c.cmd)
		if !strings.Contains(text, c.want) || c.secret != "" && strings.Contains(text, c.secret) {
			t.Errorf("%s: want %q and no %q in\n%s", c.cmd, c.want, c.secret, text)
		}
		if strings.Contains(text, "Basic ") {
			t.Errorf("%s: a literal Basic header:\n%s", c.cmd, text)
		}
		if c.secret != "" && !strings.Contains(text, "# curl was given a") {
			t.Errorf("%s: no comment saying what to set:\n%s", c.cmd, text)
		}
		if strings.Contains(p.Target, "@") {
			t.Errorf("%s: target %q keeps its credentials", c.cmd, p.Target)
		}
	}
}

// curl's @FILE is read only from the current directory (or --allow-files),
// never from /proc: the file's text goes into the plan.
func TestCurlFilesStayInTheCurrentDirectory(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("s3cr3t"), 0o644)
	here := t.TempDir()
	os.WriteFile(filepath.Join(here, "body.json"), []byte(`{"a":1}`), 0o644)
	t.Chdir(here)
	rel, _ := filepath.Rel(here, outside)
	for _, cmd := range []string{
		`curl --data-binary @/proc/self/environ http://h.test/x`,
		`curl -d @` + outside + ` http://h.test/x`,
		`curl --data-binary @` + rel + ` http://h.test/x`,
		`curl -F f=@` + outside + ` http://h.test/x`,
		`curl -F 'f=<` + outside + `' http://h.test/x`,
	} {
		out, _, err := Curl(cmd, Options{})
		if err == nil || !strings.Contains(err.Error(), "--allow-files") && !strings.Contains(err.Error(), "/proc") {
			t.Errorf("%s: err = %v\n%s", cmd, err, out)
		}
	}
	if _, _, err := Curl(`curl -d @`+outside+` http://h.test/x`, Options{AllowFiles: []string{filepath.Dir(outside)}}); err != nil {
		t.Errorf("--allow-files did not allow it: %v", err)
	}
	if out, _, err := Curl(`curl --data-binary @body.json http://h.test/x`, Options{}); err != nil || !strings.Contains(string(out), "a: 1") {
		t.Errorf("a file in the current directory: %v\n%s", err, out)
	}
}
