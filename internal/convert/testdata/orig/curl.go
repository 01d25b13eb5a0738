package convert

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
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
	x := &exchange{fromCurl: true}
	var rawURL, method string
	var data []string
	var dataJSON, get, head bool
	var notes []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, error) {
			// -XPOST and --request=POST as well as -X POST.
			if strings.HasPrefix(a, "--") {
				if _, v, ok := strings.Cut(a, "="); ok {
					return v, nil
				}
			} else if len(a) > 2 {
				return a[2:], nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("curl option %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		name := a
		if strings.HasPrefix(a, "--") {
			name, _, _ = strings.Cut(a, "=")
		} else if strings.HasPrefix(a, "-") && len(a) > 2 {
			name = a[:2]
		}
		var v string
		switch name {
		case "-X", "--request", "-H", "--header", "-d", "--data", "--data-raw", "--data-binary", "--data-ascii",
			"--data-urlencode", "--json", "-u", "--user", "-b", "--cookie", "-A", "--user-agent", "-e", "--referer", "--url":
			if v, err = val(); err != nil {
				return nil, Summary{}, err
			}
		}
		switch name {
		case "-X", "--request":
			method = strings.ToUpper(v)
		case "-H", "--header":
			n, hv, ok := strings.Cut(v, ":")
			if !ok {
				return nil, Summary{}, fmt.Errorf("bad curl header %q: expected \"Name: value\"", v)
			}
			x.headers = append(x.headers, kv{strings.TrimSpace(n), strings.TrimSpace(hv)})
		case "-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--json", "--data-urlencode":
			if strings.HasPrefix(v, "@") && name != "--data-raw" {
				b, err := os.ReadFile(v[1:])
				if err != nil {
					return nil, Summary{}, fmt.Errorf("curl %s %s: %v", name, v, err)
				}
				v = string(b)
				if name != "--data-binary" && name != "--json" {
					// curl strips newlines from -d @file.
					v = strings.NewReplacer("\r", "", "\n", "").Replace(v)
				}
			}
			if name == "--data-urlencode" {
				k, val, ok := strings.Cut(v, "=")
				if ok {
					v = k + "=" + url.QueryEscape(val)
				} else {
					v = url.QueryEscape(v)
				}
			}
			if name == "--json" {
				dataJSON = true
			}
			data = append(data, v)
		case "-u", "--user":
			x.headers = append(x.headers, kv{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(v))})
		case "-b", "--cookie":
			if strings.Contains(v, "=") {
				// Given on the command line, a cookie is the user's choice,
				// not one a server set that a jar would hold.
				x.headers = append(x.headers, kv{"Cookie", v})
			}
		case "-A", "--user-agent":
			x.headers = append(x.headers, kv{"User-Agent", v})
		case "-e", "--referer":
			x.headers = append(x.headers, kv{"Referer", v})
		case "--url":
			rawURL = v
		case "-G", "--get":
			get = true
		case "-I", "--head":
			head = true
		case "-k", "--insecure":
			notes = append(notes, "curl -k: add tls: {insecure: true} to the plan to skip certificate checks")
		case "-L", "--location":
			notes = append(notes, "curl -L: the plan does not follow redirects; a 3xx answer counts as a success")
		default:
			if strings.HasPrefix(a, "-") {
				// --compressed, -s, -v, -i and the like change what curl
				// shows, not what it sends.
				continue
			}
			if rawURL == "" {
				rawURL = a
			}
		}
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
	case len(data) > 0:
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
