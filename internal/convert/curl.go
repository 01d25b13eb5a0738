package convert

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stampede-load/stampede/internal/localfile"
)

// Curl converts one curl command line (as a browser's "Copy as cURL"
// writes it, or as typed) to a plan of one request; -d @FILE reads FILE.
func Curl(cmdline string, o Options) ([]byte, Summary, error) {
	args, err := shellWords(cmdline)
	if err != nil {
		return nil, Summary{}, err
	}
	if len(args) > 0 && (args[0] == "curl" || strings.HasSuffix(args[0], "/curl")) {
		args = args[1:]
	}
	opts, err := curlOptions(args)
	if err != nil {
		return nil, Summary{}, err
	}
	c := &curlCmd{x: &exchange{fromCurl: true}, o: &o}
	for _, op := range opts {
		if err := c.apply(op.name, op.value); err != nil {
			return nil, Summary{}, err
		}
	}
	if c.x.isMultipart && len(c.data) > 0 {
		return nil, Summary{}, fmt.Errorf("curl -F and -d together: curl refuses this too; give the body one way")
	}
	if err := c.setURL(); err != nil {
		return nil, Summary{}, err
	}
	c.setMethodAndBody()
	c.setRedirects()
	if err := c.setBasicAuth(); err != nil {
		return nil, Summary{}, err
	}
	if o.Source == "" {
		o.Source = "a curl command"
	}
	// One request: nothing to correlate.
	o.NoCorrelate = true
	return c.build(args, o) // curlbody.go
}

// curlCmd is a curl command line read into the one exchange it sends.
type curlCmd struct {
	x        *exchange
	o        *Options
	rawURL   string
	method   string
	data     []string // -d and its kin, joined with & as curl does
	urlQuery []string
	dataJSON bool // --json: the body's default type is JSON
	get      bool // -G: the data goes in the query
	head     bool
	notes    []string
	basic    string // curl -u USER:PASSWORD
	hasBasic bool
	// location is -L: follow redirects, as the plan does by default;
	// without it curl answers with the 3xx (redirects: 0).
	location  bool
	maxRedirs string
	// envRefs are the ${NAME} references the URL's shell variables
	// became, by placeholder number (curlenv.go).
	envRefs []string
	// acceptNamed: a -H names Accept (even as 'Accept:', which sends
	// none), so --json adds no Accept of its own.
	acceptNamed bool
}

// apply takes one curl option (name "" is a bare URL).
func (c *curlCmd) apply(name, v string) error {
	x := c.x
	if !envOptions[name] {
		v = unmark(v)
	}
	switch name {
	case "":
		if c.rawURL == "" {
			c.rawURL = v
		}
	case "request":
		c.method = strings.ToUpper(v)
	case "header":
		return c.header(v)
	case "data", "data-raw", "data-binary", "data-ascii", "json", "data-urlencode":
		return c.addData(name, v)
	case "form", "form-string":
		p, err := curlFormPart(v, name == "form-string", c.o.AllowFiles)
		if err != nil {
			return err
		}
		x.isMultipart = true
		x.multipart = append(x.multipart, p)
	case "upload-file":
		return fmt.Errorf("curl -T %s: uploading a file as the whole body is not converted; use body_file: %s in the plan's step (with method: PUT)", v, v)
	case "user":
		c.basic, c.hasBasic = v, true
	case "oauth2-bearer":
		h, comment := bearerHeader(v)
		x.headers = append(x.headers, kv{"Authorization", h})
		if comment != "" {
			c.o.Comments = append(c.o.Comments, comment)
		}
	case "cookie":
		if strings.Contains(v, "=") {
			// Given on the command line, a cookie is the user's choice,
			// not one a server set that a jar would hold: every user
			// sends it (render's header comment says so).
			x.headers = append(x.headers, kv{"Cookie", envRefs(v)})
		} else {
			c.notes = append(c.notes, fmt.Sprintf("curl -b %s: cookies read from a file are left out; each user's jar holds the cookies servers set", v))
		}
	case "user-agent":
		x.headers = append(x.headers, kv{"User-Agent", v})
	case "referer":
		x.headers = append(x.headers, kv{"Referer", strings.TrimSuffix(v, ";auto")})
	case "range":
		x.headers = append(x.headers, kv{"Range", "bytes=" + v})
	case "url":
		c.rawURL = v
	case "url-query":
		c.urlQuery = append(c.urlQuery, v)
	default:
		return c.behaviour(name, v)
	}
	return nil
}

// behaviour takes the options that change how curl sends rather than
// what: the method's switches, certificate checks, compression, the time
// limit, redirects.
func (c *curlCmd) behaviour(name, v string) error {
	switch name {
	case "get":
		c.get = true
	case "head":
		c.head = true
	case "insecure":
		c.notes = append(c.notes, "curl -k: add tls: {insecure: true} to the plan to skip certificate checks")
	case "compressed":
		c.compressed()
	case "max-time":
		return c.maxTime(v)
	case "location":
		c.location = true
	case "max-redirs":
		return c.setMaxRedirs(v)
	}
	return nil
}

// header takes a -H value, its shell variables marked (curlauth.go).
func (c *curlCmd) header(marked string) error {
	v := unmark(marked)
	n, hv, ok := strings.Cut(marked, ":")
	n = unmark(n)
	if name, _, _ := strings.Cut(n, ";"); strings.EqualFold(strings.TrimSpace(name), "Accept") {
		c.acceptNamed = true
	}
	if !ok {
		if n, ok := strings.CutSuffix(v, ";"); ok {
			// -H 'X-Empty;' sends the header with no value.
			c.x.headers = append(c.x.headers, kv{strings.TrimSpace(n), ""})
			return nil
		}
		if strings.HasPrefix(v, "@") {
			return fmt.Errorf("curl -H @%s: headers from a file are not supported; give each as -H 'Name: value'", v[1:])
		}
		return fmt.Errorf("bad curl header %q: expected \"Name: value\"", v)
	}
	if strings.TrimSpace(unmark(hv)) == "" {
		// -H 'Accept:' tells curl not to send its own; the plan sends
		// none of curl's anyway.
		return nil
	}
	// A shell variable in any header ($OPENAI_API_KEY in api-key) is read
	// from the environment at run time, as the shell would have, and its
	// value is never written into the plan.
	hv = envRefs(strings.TrimSpace(hv))
	c.x.headers = append(c.x.headers, kv{strings.TrimSpace(n), hv})
	return nil
}

// addData takes a -d (or --data-*, --json) value, read from a file for
// @file as curl does.
func (c *curlCmd) addData(name, v string) error {
	if strings.HasPrefix(v, "@") && name != "data-raw" {
		b, err := readLocal(v[1:], c.o.AllowFiles)
		if err != nil {
			return fmt.Errorf("curl --%s %s: %v", name, v, err)
		}
		v = string(b)
		if name != "data-binary" && name != "json" {
			// curl strips newlines from -d @file.
			v = strings.NewReplacer("\r", "", "\n", "").Replace(v)
		}
	}
	if name == "data-urlencode" {
		k, val, ok := strings.Cut(v, "=")
		if ok {
			v = k + "=" + url.QueryEscape(val)
		} else {
			v = url.QueryEscape(v)
		}
	}
	if name == "json" {
		c.dataJSON = true
	}
	c.data = append(c.data, v)
	return nil
}

// setURL parses the URL, http:// by default as curl's, with the
// --url-query parts added.
func (c *curlCmd) setURL() error {
	if c.rawURL == "" {
		return fmt.Errorf("no URL in the curl command")
	}
	c.urlEnvRefs()
	if !strings.Contains(c.rawURL, "://") {
		c.rawURL = "http://" + c.rawURL
	}
	u, err := url.Parse(c.rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad URL %q in the curl command: expected http(s)://host/...", c.rawURL)
	}
	for _, q := range c.urlQuery {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += q
	}
	c.x.u = u
	return nil
}

// setMethodAndBody picks the method curl would send and the body with
// the Content-Type curl would give it.
func (c *curlCmd) setMethodAndBody() {
	x, u := c.x, c.x.u
	body := strings.Join(c.data, "&")
	switch {
	case c.head:
		x.method = "HEAD"
	case c.get && len(c.data) > 0:
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += body
		body = ""
		x.method = "GET"
	case len(c.data) > 0 || x.isMultipart:
		x.method = "POST"
	default:
		x.method = "GET"
	}
	if c.method != "" {
		x.method = c.method
	}
	if c.dataJSON && !c.acceptNamed {
		// curl --json also asks for JSON back (curl 7.82+).
		x.headers = append(x.headers, kv{"Accept", "application/json"})
	}
	if body == "" {
		return
	}
	x.body = []byte(body)
	x.bodyCT = header(x.headers, "Content-Type")
	if x.bodyCT == "" {
		if c.dataJSON {
			x.bodyCT = "application/json"
		} else {
			// What curl sends with -d.
			x.bodyCT = "application/x-www-form-urlencoded"
		}
		x.headers = append(x.headers, kv{"Content-Type", x.bodyCT})
	}
	// curl -d '{"a":1}' says form but sends JSON; the plan sends the same
	// bytes under the same header either way.
	if mediaType(x.bodyCT) == "application/x-www-form-urlencoded" && !looksJSON(x.body) {
		if vals, ok := parseForm(body); ok {
			x.isForm, x.form = true, vals
		}
	}
}

// setBasicAuth moves -u (or the URL's user:password) to the plan's
// target, where reports keep the password out.
func (c *curlCmd) setBasicAuth() error {
	u := c.x.u
	if u.User != nil && !c.hasBasic {
		pass, ok := u.User.Password()
		if !ok {
			return fmt.Errorf("curl URL %s has a user but no password (curl would prompt for one): write user:password@", u.Redacted())
		}
		c.basic, c.hasBasic = u.User.Username()+":"+pass, true
	}
	u.User = nil
	if !c.hasBasic {
		return nil
	}
	// curl sends user:password as Basic authentication; a plan's target
	// does the same.
	user, pass, ok := strings.Cut(c.basic, ":")
	switch {
	case !ok:
		return fmt.Errorf("curl -u %s has no password (curl would prompt for one): write -u user:password", unmark(user))
	case header(c.x.headers, "Authorization") != "":
		c.notes = append(c.notes, "the user:password is left out: an Authorization header is given, which wins")
	default:
		userinfo, comment := basicUserinfo(user, pass)
		c.o.TargetUserinfo = userinfo
		if comment != "" {
			c.o.Comments = append(c.o.Comments, comment)
		}
	}
	return nil
}

// shellWords splits a command line as a POSIX shell would for the quoting
// forms curl commands are copied with: '…', "…", $'…', backslashes and
// line continuations.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '\n' {
				continue
			}
			if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				i++
				continue
			}
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in the curl command")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '$' && i+1 < len(s) && s[i+1] == '\'':
			var err error
			if i, err = ansiCQuoted(s, i, &cur); err != nil {
				return nil, err
			}
			inWord = true
		case c == '"':
			var err error
			if i, err = doubleQuoted(s, i, &cur); err != nil {
				return nil, err
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			if c == '$' {
				cur.WriteByte(expandMark)
			}
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// ansiCQuoted writes the $'…' word starting at s[i] to cur, its
// backslash escapes decoded, and returns the index of its closing quote.
func ansiCQuoted(s string, i int, cur *strings.Builder) (int, error) {
	i += 2
	for ; i < len(s) && s[i] != '\''; i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			cur.WriteByte(s[i])
			continue
		}
		i = ansiCEscape(s, i+1, cur)
	}
	if i >= len(s) {
		return i, fmt.Errorf("unterminated $' in the curl command")
	}
	return i, nil
}

// ansiCEscape writes the escape whose letter is s[i] and returns the
// index of its last byte.
func ansiCEscape(s string, i int, cur *strings.Builder) int {
	switch e := s[i]; e {
	case 'n':
		cur.WriteByte('\n')
	case 't':
		cur.WriteByte('\t')
	case 'r':
		cur.WriteByte('\r')
	case 'x':
		if i+2 < len(s) {
			if b, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				if b != 0 { // the shell ends the word at a NUL; expandMark is one
					cur.WriteByte(byte(b))
				}
				return i + 2
			}
		}
		cur.WriteByte(e)
	case 'u':
		if i+4 < len(s) {
			if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
				cur.WriteRune(rune(r))
				return i + 4
			}
		}
		cur.WriteByte(e)
	default:
		cur.WriteByte(e)
	}
	return i
}

// doubleQuoted writes the "…" word starting at s[i] to cur and returns
// the index of its closing quote.
func doubleQuoted(s string, i int, cur *strings.Builder) (int, error) {
	i++
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		} else if s[i] == '$' {
			cur.WriteByte(expandMark)
		}
		cur.WriteByte(s[i])
	}
	if i >= len(s) {
		return i, fmt.Errorf("unterminated \" in the curl command")
	}
	return i, nil
}

type curlOpt struct {
	name  string // long name without dashes; "" for a URL
	value string
}

// curlOptions reads a curl command's words as curl does: clustered
// switches (-sSL), a short option's value attached (-XPOST) or next, a
// long option's after = or next, and every option in curl's table that
// takes a value given one, so it is never read as the URL.
func curlOptions(args []string) ([]curlOpt, error) {
	var out []curlOpt
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func(opt string) (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("curl option %s needs a value", opt)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "--":
			for _, r := range args[i+1:] {
				out = append(out, curlOpt{"", r})
			}
			return out, nil
		case strings.HasPrefix(a, "--"):
			name, v, eq := strings.Cut(a[2:], "=")
			if !curlValued[name] {
				out = append(out, curlOpt{name: name})
				continue
			}
			if !eq {
				var err error
				if v, err = next(a); err != nil {
					return nil, err
				}
			}
			out = append(out, curlOpt{name, v})
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				c := a[k]
				if long, ok := curlShort[c]; ok {
					v := a[k+1:]
					if v == "" {
						var err error
						if v, err = next("-" + string(c)); err != nil {
							return nil, err
						}
					}
					out = append(out, curlOpt{long, v})
					break
				}
				out = append(out, curlOpt{name: curlShortFlag[c]})
			}
		default:
			out = append(out, curlOpt{"", a})
		}
	}
	return out, nil
}

// curlFormPart reads -F name=value, name=@file[;type=...][;filename=...]
// and name=<file (the file's text as the value).
func curlFormPart(v string, literal bool, allow []string) (mpart, error) {
	name, val, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return mpart{}, fmt.Errorf("bad curl -F %q: expected name=value or name=@file", v)
	}
	p := mpart{name: name}
	if literal || val == "" || val[0] != '@' && val[0] != '<' {
		if !literal {
			// ;type= after a text value sets the part's content type.
			if t, rest, ok := cutParam(val, "type"); ok {
				val, p.ctype = rest, t
			}
		}
		p.value = val
		return p, nil
	}
	file := val[1:]
	for _, key := range []string{"type", "filename", "headers", "encoder"} {
		if t, rest, ok := cutParam(file, key); ok {
			file = rest
			switch key {
			case "type":
				p.ctype = t
			case "filename":
				p.file = t
			default:
				return mpart{}, fmt.Errorf("curl -F %q: ;%s= is not converted", v, key)
			}
		}
	}
	if file == "-" {
		return mpart{}, fmt.Errorf("curl -F %q: a part read from stdin is not converted", v)
	}
	if val[0] == '<' {
		b, err := readLocal(file, allow)
		if err != nil {
			return mpart{}, fmt.Errorf("curl -F %s: %v", v, err)
		}
		p.value = string(b)
		return p, nil
	}
	abs, err := localfile.Resolve(file, localRoots(allow))
	if err != nil {
		return mpart{}, fmt.Errorf("curl -F %s: %v", v, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return mpart{}, fmt.Errorf("curl -F %s: %v", v, err)
	}
	p.path = abs
	if p.file == "" {
		p.file = filepath.Base(file)
	}
	return p, nil
}

// cutParam takes ";key=value" off the end of s.
func cutParam(s, key string) (string, string, bool) {
	i := strings.LastIndex(s, ";"+key+"=")
	if i < 0 {
		return "", s, false
	}
	v := s[i+len(key)+2:]
	if strings.Contains(v, ";") {
		return "", s, false
	}
	return strings.Trim(v, `"`), s[:i], true
}
