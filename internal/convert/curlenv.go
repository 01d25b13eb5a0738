package convert

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// Shell variables in a curl command's URL ($HOST, ${API_KEY}) become the
// plan's ${NAME} references. A URL with "${" in it does not parse, and
// one written as the plan's text would be escaped as a recorded value, so
// each variable stands in the URL as a placeholder word while the command
// is converted, and the placeholders are turned into references in the
// finished plan.

// envPlaceholder is the word standing for the i-th variable: letters and
// digits only, so it survives URL parsing and escaping in any part of a
// URL, the host included.
func envPlaceholder(i int) string { return "stampedeenvref" + strconv.Itoa(i) + "x" }

// urlEnvRefs replaces the shell variables of the URL and --url-query
// parts with placeholders.
func (c *curlCmd) urlEnvRefs() {
	swap := func(s string) string {
		return unmark(shellRefRE.ReplaceAllStringFunc(s, func(m string) string {
			ph := envPlaceholder(len(c.envRefs))
			c.envRefs = append(c.envRefs, envRefs(m))
			return ph
		}))
	}
	c.rawURL = swap(c.rawURL)
	for i, q := range c.urlQuery {
		c.urlQuery[i] = swap(q)
	}
}

// loadChecked loads the converted plan as a run would, each variable the
// command line names (and the credentials' CURL_PASSWORD and CURL_TOKEN)
// set and no other: a plan that reads a variable nobody set, or does not
// load at all, is the converter's fault and is refused, not written. It
// returns the plan as it loaded.
func loadChecked(text []byte, args, allow []string) (*plan.Plan, error) {
	names := map[string]bool{passwordEnv: true, tokenEnv: true}
	for _, a := range args {
		for _, m := range shellRefRE.FindAllStringSubmatch(a, -1) {
			names[m[1]+m[2]] = true
		}
	}
	env := func(name string) (string, bool) { return "set-by-the-user", names[name] }
	p, err := plan.ParseWith("converted.yaml", text, env, plan.LoadOptions{AllowFiles: append([]string{"."}, allow...)})
	if err != nil {
		return nil, fmt.Errorf("the converted plan does not load (please report this): %v", err)
	}
	return p, nil
}

// restoreEnvRefs turns the placeholders in the plan and the notes into
// ${NAME} references. Later placeholders first: stampedeenvref1x is a
// prefix of stampedeenvref10x.
func (c *curlCmd) restoreEnvRefs(plan []byte, s *Summary) []byte {
	for i := len(c.envRefs) - 1; i >= 0; i-- {
		ph := envPlaceholder(i)
		plan = bytes.ReplaceAll(plan, []byte(ph), []byte(c.envRefs[i]))
		for j, n := range s.Notes {
			s.Notes[j] = strings.ReplaceAll(n, ph, c.envRefs[i])
		}
		s.MainHost = strings.ReplaceAll(s.MainHost, ph, c.envRefs[i])
	}
	return plan
}

// compressed is curl --compressed: ask for a compressed answer, as curl
// does. stampede reads the answer as it comes, so the bytes counted are
// the ones on the wire, as with curl; a check of the body would read them
// compressed, which the note says.
func (c *curlCmd) compressed() {
	if header(c.x.headers, "Accept-Encoding") != "" {
		return
	}
	c.x.headers = append(c.x.headers, kv{"Accept-Encoding", "gzip, deflate, br"})
	c.notes = append(c.notes, "curl --compressed: the step sends Accept-Encoding: gzip, deflate, br; stampede does not decompress the answer, so a check or capture added on its body reads compressed bytes (drop the header for those)")
}

// maxTime is curl -m/--max-time SECONDS: the whole request's time limit,
// which is the step's timeout.
func (c *curlCmd) maxTime(v string) error {
	secs, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || secs <= 0 || secs > 1e6 {
		return fmt.Errorf("curl --max-time %q: expected a number of seconds above zero", v)
	}
	d := time.Duration(secs * float64(time.Second))
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond // the plan's durations are written to 10 ms
	}
	c.x.timeout = d
	return nil
}

// setMaxRedirs takes curl --max-redirs N: with -L, the step's redirect limit
// (-1 is curl's "no limit", which a plan does not have: its default).
func (c *curlCmd) setMaxRedirs(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < -1 {
		return fmt.Errorf("curl --max-redirs %q: expected a whole number of redirects", v)
	}
	if n >= 0 {
		c.maxRedirs = strconv.Itoa(n)
	}
	return nil
}

// setRedirects makes the step follow redirects as curl would: not at
// all without -L (curl answers with the 3xx), else up to --max-redirs.
func (c *curlCmd) setRedirects() {
	switch {
	case !c.location:
		c.x.redirects = "0"
	case c.maxRedirs != "":
		c.x.redirects = c.maxRedirs
	}
}
