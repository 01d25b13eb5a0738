package convert

import (
	"net/url"
	"regexp"
	"strings"
)

// expandMark goes before each $ that shellWords read outside single
// quotes and $'…', where the shell would have expanded it: only those
// are variables. A $ in '…' is text ('…?$select=subject&$top=5', as
// Chrome's "Copy as cURL" quotes every word). A NUL cannot be in a
// command's word, so the mark is never the user's.
const expandMark = '\x00'

// shellRefRE is a shell variable as a copied command line holds it
// unexpanded, marked: $NAME or ${NAME}.
var shellRefRE = regexp.MustCompile(`\x00\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\x00\$([A-Za-z_][A-Za-z0-9_]*)`)

// envOptions are the curl options whose shell variables become the
// plan's references; every other option's value is taken as text.
var envOptions = map[string]bool{"": true, "url": true, "url-query": true, "header": true, "cookie": true, "user": true, "oauth2-bearer": true}

// unmark drops the marks of the $s no variable followed.
func unmark(v string) string { return strings.ReplaceAll(v, string(expandMark), "") }

// envRefs turns the shell variables in v into the plan's ${NAME}
// references, so `-H "Authorization: Bearer $TOKEN"` reads TOKEN from the
// environment at run time as the shell would have, and the token is
// never written into the plan.
// A literal ${ (single-quoted) is escaped as the plan's $${, since the
// result is plan text.
func envRefs(v string) string {
	var b strings.Builder
	last := 0
	for _, m := range shellRefRE.FindAllStringSubmatchIndex(v, -1) {
		b.WriteString(litKey(unmark(v[last:m[0]])))
		b.WriteString("${" + group(v, m, 1) + group(v, m, 2) + "}")
		last = m[1]
	}
	b.WriteString(litKey(unmark(v[last:])))
	return b.String()
}

func group(v string, m []int, k int) string {
	if m[2*k] < 0 {
		return ""
	}
	return v[m[2*k]:m[2*k+1]]
}

// onlyRef reports whether v is one shell variable and nothing else, and
// returns it as a plan reference.
func onlyRef(v string) (string, bool) {
	if loc := shellRefRE.FindStringIndex(v); loc != nil && loc[0] == 0 && loc[1] == len(v) {
		return envRefs(v), true
	}
	return "", false
}

// Environment variables a converted plan reads where curl was given a
// literal credential: the plan is a file that gets shared and committed,
// and a result carries the plan's text.
const (
	passwordEnv = "CURL_PASSWORD"
	tokenEnv    = "CURL_TOKEN"
)

// basicUserinfo is the target's user:password@ for curl -u USER:PASSWORD
// (or a URL's user:password@): the plan's target sends it as Basic
// authentication and keeps the password out of every report. The password
// becomes an environment reference; a literal one is left for the user to
// set, which comment says.
func basicUserinfo(user, pass string) (userinfo, comment string) {
	u, ok := onlyRef(user)
	if !ok {
		u = url.User(unmark(user)).String()
	}
	p, ok := onlyRef(pass)
	if !ok {
		p = "${" + passwordEnv + "}"
		comment = "curl was given a password: it is not written here. Set " + passwordEnv +
			" to it before running this plan."
	}
	return u + ":" + p, comment
}

// bearerHeader is the Authorization header for curl --oauth2-bearer TOKEN,
// with the token read from the environment.
func bearerHeader(token string) (value, comment string) {
	if ref, ok := onlyRef(token); ok {
		return "Bearer " + ref, ""
	}
	return "Bearer ${" + tokenEnv + "}", "curl was given a bearer token: it is not written here. Set " + tokenEnv + " to it before running this plan."
}
