package collect

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

const redacted = "xxxxx"

// sensitiveParams are query or DSN keys whose values are credentials.
var sensitiveParams = map[string]bool{
	"password": true, "pass": true, "passwd": true, "pwd": true,
	"token": true, "access_token": true, "api_key": true, "apikey": true,
	"secret": true, "sslpassword": true, "auth": true,
}

// dsnPasswordRE finds password=... in a libpq key/value DSN, quoted or not.
var dsnPasswordRE = regexp.MustCompile(`(?i)\b(password|sslpassword)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns target with passwords and tokens replaced, for anything a
// person or a result file will see. Plans take credentials from ${ENV}; by
// the time a monitor runs they are plain text in the target, so every name,
// problem and error from here goes through this (or scrub).
func Redact(target string) string {
	if u, err := url.Parse(target); err == nil && u.Scheme != "" && (u.Host != "" || u.User != nil) {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		q := u.Query()
		changed := false
		for k := range q {
			if sensitiveParams[strings.ToLower(k)] {
				q.Set(k, redacted)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
		// url.String would escape "xxxxx" nowhere, but it re-escapes other
		// parts; that is fine for display.
		return u.String()
	}
	return dsnPasswordRE.ReplaceAllString(target, "${1}="+redacted)
}

// secrets lists the literal credentials in target, so that error text from
// a client library — which may quote its connection string back — can be
// scrubbed of them whatever its format.
func secrets(target string) []string {
	var out []string
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		if p, has := u.User.Password(); has && p != "" {
			out = append(out, p)
			// Also as written in the URL, escaped.
			if _, esc, ok := strings.Cut(u.User.String(), ":"); ok && esc != p {
				out = append(out, esc)
			}
		}
		for k, vs := range u.Query() {
			if sensitiveParams[strings.ToLower(k)] {
				for _, v := range vs {
					if v != "" {
						out = append(out, v)
					}
				}
			}
		}
		return out
	}
	for _, m := range dsnPasswordRE.FindAllStringSubmatch(target, -1) {
		v := strings.Trim(m[2], "'")
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// RedactText replaces in msg every credential that target holds, for error
// text that may quote a connection string back in any format.
func RedactText(msg, target string) string { return scrub(msg, secrets(target)) }

// scrub replaces every secret in msg, longest first so that a secret
// containing another is not half replaced.
func scrub(msg string, secrets []string) string {
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	return msg
}
