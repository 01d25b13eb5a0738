package convert

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A shell variable anywhere in a header or the URL becomes a ${NAME}
// reference: it was written into the plan as the literal text
// $OPENAI_API_KEY (sent as such), and a URL with ${HOST} was refused.
func TestCurlShellVariablesBecomeEnvReferences(t *testing.T) {
	cases := []struct{ cmd, want, not string }{
		{`curl https://api.test/v1/chat -H "api-key: $OPENAI_API_KEY" -H "X-Org: ${ORG}"`, "api-key: ${OPENAI_API_KEY}", "$OPENAI_API_KEY"},
		{`curl https://api.test/v1/chat -H "X-Org: ${ORG}"`, "X-Org: ${ORG}", "$${ORG}"},
		{`curl "https://${HOST}/items?key=${API_KEY}"`, "target: https://${HOST}", ""},
		{`curl "https://${HOST}/items?key=${API_KEY}"`, "get: /items?key=${API_KEY}", ""},
		{`curl https://api.test/Accounts/$SID/Messages.json`, "get: /Accounts/${SID}/Messages.json", "$SID/"},
		{`curl https://api.test/x --url-query "token=$TOKEN"`, "get: /x?token=${TOKEN}", "$TOKEN"},
	}
	for _, c := range cases {
		p, text, _ := curlPlan(t, c.cmd)
		if !strings.Contains(text, c.want) || c.not != "" && strings.Contains(text, c.not) {
			t.Errorf("%s: want %q and no %q in\n%s", c.cmd, c.want, c.not, text)
		}
		if strings.Contains(text, "stampedeenvref") {
			t.Errorf("%s: a placeholder is left in the plan:\n%s", c.cmd, text)
		}
		if len(p.Scenarios) != 1 {
			t.Errorf("%s: %d scenarios", c.cmd, len(p.Scenarios))
		}
	}
}

// -u $SID:$TOKEN stays two references the target reads at run time: no
// Authorization header with a Base64 value fixed at conversion.
func TestCurlUserWithEnvReferencesIsNotBaked(t *testing.T) {
	_, text, _ := curlPlan(t, `curl -u $SID:$TOKEN https://api.test/2010-04-01/Accounts/$SID/Messages.json`)
	if !strings.Contains(text, "target: https://${SID}:${TOKEN}@api.test") || strings.Contains(text, "Authorization") || strings.Contains(text, "Basic") {
		t.Errorf("want the credentials as target references, no Authorization header:\n%s", text)
	}
}

// --compressed asks for a compressed answer and --max-time is the step's
// timeout: both were dropped without a word.
func TestCurlCompressedAndMaxTime(t *testing.T) {
	p, text, s := curlPlan(t, `curl --compressed --max-time 2.5 https://api.test/x`)
	st := requests(p)[0]
	if st.Timeout != 2500*time.Millisecond {
		t.Errorf("timeout = %v, want 2.5s:\n%s", st.Timeout, text)
	}
	if !strings.Contains(text, "Accept-Encoding: gzip, deflate, br") {
		t.Errorf("no Accept-Encoding for --compressed:\n%s", text)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "--compressed") {
		t.Errorf("no note on the compressed answer: %v", s.Notes)
	}
	p, text, _ = curlPlan(t, `curl -m 7 https://api.test/x`)
	if requests(p)[0].Timeout != 7*time.Second {
		t.Errorf("-m 7: timeout = %v:\n%s", requests(p)[0].Timeout, text)
	}
	if _, _, err := Curl(`curl --max-time soon https://api.test/x`, Options{}); err == nil || !strings.Contains(err.Error(), "max-time") {
		t.Errorf("--max-time soon: err = %v", err)
	}
}

// curl -b NAME=VALUE is a Cookie header every user sends; the header
// comment said cookies were left to each user's jar, which the plan then
// contradicted.
func TestCurlCookieHeaderCommentSaysWhatThePlanDoes(t *testing.T) {
	_, text, _ := curlPlan(t, `curl -b "session=$SID; theme=dark" https://api.test/x`)
	if !strings.Contains(text, "Cookie: session=${SID}; theme=dark") {
		t.Errorf("want the cookie with its reference:\n%s", text)
	}
	if strings.Contains(text, "Cookies are left to each user's jar") || !strings.Contains(text, "The Cookie header is the curl command's own") {
		t.Errorf("the header comment contradicts the Cookie header:\n%s", text)
	}
	_, text, _ = curlPlan(t, `curl https://api.test/x`)
	if !strings.Contains(text, "Cookies are left to each user's jar") {
		t.Errorf("without a cookie the comment changed:\n%s", text)
	}
}

// The plan follows redirects by default now; curl follows them only with
// -L, and a browser's recorded 3xx is a step of its own followed by the
// step it led to. Both were left to the plan's default, so a recorded
// 302 step followed the redirect too (and failed its expect: {status: 302}).
func TestRedirectsFollowTheRecording(t *testing.T) {
	limit := func(cmd string) string {
		p, _, _ := curlPlan(t, cmd)
		r := requests(p)[0].Redirects
		if r == nil {
			return "default"
		}
		return strconv.Itoa(*r)
	}
	for cmd, want := range map[string]string{
		`curl https://api.test/x`:                     "0",
		`curl -L https://api.test/x`:                  "default",
		`curl -L --max-redirs 3 https://api.test/x`:   "3",
		`curl --location --max-redirs -1 https://a/x`: "default",
	} {
		if got := limit(cmd); got != want {
			t.Errorf("%s: redirects %s, want %s", cmd, got, want)
		}
	}
	har := harOf(t,
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/login", reqMime: "application/x-www-form-urlencoded", reqText: "u=a", status: 302, respH: map[string]string{"Location": "/home"}},
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/home", status: 200},
	)
	p, text, _ := load(t, har, Options{})
	steps := requests(p)
	if steps[0].Redirects == nil || *steps[0].Redirects != 0 || steps[1].Redirects != nil {
		t.Errorf("the recorded 302 must not be followed by its step, the next step is the hop:\n%s", text)
	}
}
