package convert

import (
	"net/url"
	"regexp"
)

// shellRefRE is a shell variable as a copied command line holds it
// unexpanded: $NAME or ${NAME}.
var shellRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// envRefs turns the shell variables in v into the plan's ${NAME}
// references, so `-H "Authorization: Bearer $TOKEN"` reads TOKEN from the
// environment at run time as the shell would have, and the token is
// never written into the plan.
func envRefs(v string) string {
	return shellRefRE.ReplaceAllStringFunc(v, func(m string) string {
		s := shellRefRE.FindStringSubmatch(m)
		return "${" + s[1] + s[2] + "}"
	})
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
		u = url.User(user).String()
	}
	p, ok := onlyRef(pass)
	if !ok {
		p = "${" + passwordEnv + "}"
		comment = "curl was given a password: it is not written here. Set " + passwordEnv +
			" to it before running this plan (URL-escape any / ? # @ % in it)."
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
