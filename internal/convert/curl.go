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
	x := &exchange{fromCurl: true}
	var rawURL, method string
	var data, urlQuery []string
	var dataJSON, get, head bool
	var notes []string
	basic, hasBasic := "", false // curl -u USER:PASSWORD
	for _, op := range opts {
		name, v := op.name, op.value
		switch name {
		case "":
			if rawURL == "" {
				rawURL = v
			}
		case "request":
			method = strings.ToUpper(v)
		case "header":
			n, hv, ok := strings.Cut(v, ":")
			if !ok {
				if n, ok := strings.CutSuffix(v, ";"); ok {
					// -H 'X-Empty;' sends the header with no value.
					x.headers = append(x.headers, kv{strings.TrimSpace(n), ""})
					continue
				}
				if strings.HasPrefix(v, "@") {
					return nil, Summary{}, fmt.Errorf("curl -H @%s: headers from a file are not supported; give each as -H 'Name: value'", v[1:])
				}
				return nil, Summary{}, fmt.Errorf("bad curl header %q: expected \"Name: value\"", v)
			}
			if strings.TrimSpace(hv) == "" {
				// -H 'Accept:' tells curl not to send its own; the plan
				// sends none of curl's anyway.
				continue
			}
			hv = strings.TrimSpace(hv)
			if secretHeader(strings.TrimSpace(n)) {
				hv = envRefs(hv)
			}
			x.headers = append(x.headers, kv{strings.TrimSpace(n), hv})
		case "data", "data-raw", "data-binary", "data-ascii", "json", "data-urlencode":
			if strings.HasPrefix(v, "@") && name != "data-raw" {
				b, err := readLocal(v[1:], o.AllowFiles)
				if err != nil {
					return nil, Summary{}, fmt.Errorf("curl --%s %s: %v", name, v, err)
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
				dataJSON = true
			}
			data = append(data, v)
		case "form", "form-string":
			p, err := curlFormPart(v, name == "form-string", o.AllowFiles)
			if err != nil {
				return nil, Summary{}, err
			}
			x.isMultipart = true
			x.multipart = append(x.multipart, p)
		case "upload-file":
			return nil, Summary{}, fmt.Errorf("curl -T %s: uploading a file as the whole body is not converted; use body_file: %s in the plan's step (with method: PUT)", v, v)
		case "user":
			basic, hasBasic = v, true
		case "oauth2-bearer":
			h, comment := bearerHeader(v)
			x.headers = append(x.headers, kv{"Authorization", h})
			if comment != "" {
				o.Comments = append(o.Comments, comment)
			}
		case "cookie":
			if strings.Contains(v, "=") {
				// Given on the command line, a cookie is the user's choice,
				// not one a server set that a jar would hold.
				x.headers = append(x.headers, kv{"Cookie", v})
			} else {
				notes = append(notes, fmt.Sprintf("curl -b %s: cookies read from a file are left out; each user's jar holds the cookies servers set", v))
			}
		case "user-agent":
			x.headers = append(x.headers, kv{"User-Agent", v})
		case "referer":
			x.headers = append(x.headers, kv{"Referer", strings.TrimSuffix(v, ";auto")})
		case "range":
			x.headers = append(x.headers, kv{"Range", "bytes=" + v})
		case "url":
			rawURL = v
		case "url-query":
			urlQuery = append(urlQuery, v)
		case "get":
			get = true
		case "head":
			head = true
		case "insecure":
			notes = append(notes, "curl -k: add tls: {insecure: true} to the plan to skip certificate checks")
		case "location":
			notes = append(notes, "curl -L: the plan does not follow redirects; a 3xx answer counts as a success")
		}
	}
	if x.isMultipart && len(data) > 0 {
		return nil, Summary{}, fmt.Errorf("curl -F and -d together: curl refuses this too; give the body one way")
	}
	if rawURL == "" {
		return nil, Summary{}, fmt.Errorf("no URL in the curl command")
	}
	if !strings.Contains(rawURL, "://") {
		rawURL = "http://" + rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, Summary{}, fmt.Errorf("bad URL %q in the curl command: expected http(s)://host/...", rawURL)
	}
	for _, q := range urlQuery {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += q
	}
	x.u = u
	body := strings.Join(data, "&")
	switch {
	case head:
		x.method = "HEAD"
	case get && len(data) > 0:
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += body
		body = ""
		x.method = "GET"
	case len(data) > 0 || x.isMultipart:
		x.method = "POST"
	default:
		x.method = "GET"
	}
	if method != "" {
		x.method = method
	}
	if body != "" {
		x.body = []byte(body)
		x.bodyCT = header(x.headers, "Content-Type")
		if x.bodyCT == "" {
			if dataJSON {
				x.bodyCT = "application/json"
			} else {
				// What curl sends with -d.
				x.bodyCT = "application/x-www-form-urlencoded"
			}
			x.headers = append(x.headers, kv{"Content-Type", x.bodyCT})
		}
		// curl -d '{"a":1}' says form but sends JSON; the plan sends the
		// same bytes under the same header either way.
		if mediaType(x.bodyCT) == "application/x-www-form-urlencoded" && !looksJSON(x.body) {
			if vals, ok := parseForm(body); ok {
				x.isForm, x.form = true, vals
			}
		}
	}
	if u.User != nil && !hasBasic {
		pass, ok := u.User.Password()
		if !ok {
			return nil, Summary{}, fmt.Errorf("curl URL %s has a user but no password (curl would prompt for one): write user:password@", u.Redacted())
		}
		basic, hasBasic = u.User.Username()+":"+pass, true
	}
	u.User = nil
	if hasBasic {
		// curl sends user:password as Basic authentication; a plan's
		// target does the same and keeps the password out of reports.
		user, pass, ok := strings.Cut(basic, ":")
		switch {
		case !ok:
			return nil, Summary{}, fmt.Errorf("curl -u %s has no password (curl would prompt for one): write -u user:password", user)
		case header(x.headers, "Authorization") != "":
			notes = append(notes, "the user:password is left out: an Authorization header is given, which wins")
		default:
			userinfo, comment := basicUserinfo(user, pass)
			o.TargetUserinfo = userinfo
			if comment != "" {
				o.Comments = append(o.Comments, comment)
			}
		}
	}
	if o.Source == "" {
		o.Source = "a curl command"
	}
	// One request: nothing to correlate.
	o.NoCorrelate = true
	out, s, err := build([]*exchange{x}, o)
	s.Notes = append(s.Notes, notes...)
	return out, s, err
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
			i += 2
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] != '\\' || i+1 >= len(s) {
					cur.WriteByte(s[i])
					continue
				}
				i++
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
							cur.WriteByte(byte(b))
							i += 2
							continue
						}
					}
					cur.WriteByte(e)
				case 'u':
					if i+4 < len(s) {
						if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
							cur.WriteRune(rune(r))
							i += 4
							continue
						}
					}
					cur.WriteByte(e)
				default:
					cur.WriteByte(e)
				}
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated $' in the curl command")
			}
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in the curl command")
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
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
