// Package convert turns a recording (a browser's HAR export, or one curl
// command) into a stampede plan: the requests in order, the recorded pauses
// as think steps, and values the server handed out and the client sent
// back (tokens, ids) turned into captures and templates, so the plan keeps
// working when the server hands out different ones.
package convert

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"
)

// harFile is the part of HAR 1.2 the converter reads. Fields a recorder
// may leave out (timings, bodies) are pointers or tolerate zero values.
type harFile struct {
	Log struct {
		Entries []harEntry `json:"entries"`
	} `json:"log"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harEntry struct {
	Started string   `json:"startedDateTime"`
	Time    *float64 `json:"time"`
	Request struct {
		Method   string  `json:"method"`
		URL      string  `json:"url"`
		Headers  []harNV `json:"headers"`
		PostData *struct {
			MimeType string  `json:"mimeType"`
			Text     string  `json:"text"`
			Params   []harNV `json:"params"`
			// Not in HAR 1.2, but some recorders write binary bodies so.
			Encoding string `json:"encoding"`
		} `json:"postData"`
	} `json:"request"`
	Response struct {
		Status  int     `json:"status"`
		Headers []harNV `json:"headers"`
		Content struct {
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Encoding string `json:"encoding"`
		} `json:"content"`
	} `json:"response"`
	// Chromium's DevTools export says what kind of resource it was.
	ResourceType string `json:"_resourceType"`
}

// exchange is one recorded request and its response, whatever it came from.
type exchange struct {
	method  string
	u       *url.URL
	headers []kv
	body    []byte
	bodyCT  string
	form    []kv // set when the body is a url-encoded form
	isForm  bool

	status      int
	respHeaders []kv
	respBody    []byte
	respCT      string

	start    time.Time // zero when not recorded
	duration time.Duration
	hasDur   bool
	resource string // HAR _resourceType, lower case
	// fromCurl: the headers were typed (or copied) for this one request,
	// so a Cookie among them is the user's, not a jar's.
	fromCurl bool
}

type kv struct{ name, value string }

func parseHAR(data []byte) ([]*exchange, error) {
	var f harFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a HAR file: %v", err)
	}
	if len(f.Log.Entries) == 0 {
		return nil, fmt.Errorf("the HAR file has no entries (log.entries is empty or missing)")
	}
	var out []*exchange
	for i, e := range f.Log.Entries {
		u, err := url.Parse(e.Request.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// data:, blob:, chrome-extension: and the like were never sent
			// over the network.
			continue
		}
		x := &exchange{
			method:   strings.ToUpper(e.Request.Method),
			u:        u,
			status:   e.Response.Status,
			resource: strings.ToLower(e.ResourceType),
		}
		if x.method == "" {
			x.method = "GET"
		}
		for _, h := range e.Request.Headers {
			x.headers = append(x.headers, kv{h.Name, h.Value})
		}
		for _, h := range e.Response.Headers {
			x.respHeaders = append(x.respHeaders, kv{h.Name, h.Value})
		}
		if pd := e.Request.PostData; pd != nil {
			x.bodyCT = pd.MimeType
			switch {
			case pd.Text != "" && strings.EqualFold(pd.Encoding, "base64"):
				b, err := base64.StdEncoding.DecodeString(pd.Text)
				if err != nil {
					return nil, fmt.Errorf("entry %d (%s %s): postData.text is not valid base64: %v", i+1, x.method, e.Request.URL, err)
				}
				x.body = b
			case pd.Text != "":
				x.body = []byte(pd.Text)
			case len(pd.Params) > 0:
				// Some recorders give a form only as params.
				x.isForm = true
				for _, p := range pd.Params {
					x.form = append(x.form, kv{p.Name, p.Value})
				}
			}
		}
		if x.bodyCT == "" {
			x.bodyCT = header(x.headers, "Content-Type")
		}
		if !x.isForm && len(x.body) > 0 && mediaType(x.bodyCT) == "application/x-www-form-urlencoded" {
			if vals, ok := parseForm(string(x.body)); ok {
				x.isForm, x.form = true, vals
			}
		}
		c := e.Response.Content
		x.respCT = c.MimeType
		if x.respCT == "" {
			x.respCT = header(x.respHeaders, "Content-Type")
		}
		if strings.EqualFold(c.Encoding, "base64") {
			if b, err := base64.StdEncoding.DecodeString(c.Text); err == nil {
				x.respBody = b
			}
		} else {
			x.respBody = []byte(c.Text)
		}
		if e.Started != "" {
			if t, err := time.Parse(time.RFC3339Nano, e.Started); err == nil {
				x.start = t
			}
		}
		// HAR writes -1 for a timing it does not know.
		if e.Time != nil && *e.Time >= 0 {
			x.duration = time.Duration(*e.Time * float64(time.Millisecond))
			x.hasDur = true
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the HAR file has no http(s) requests")
	}
	return out, nil
}

func header(h []kv, name string) string {
	for _, e := range h {
		if strings.EqualFold(e.name, name) {
			return e.value
		}
	}
	return ""
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

// parseForm splits a url-encoded body keeping its order (url.ParseQuery
// would sort it into a map).
func parseForm(s string) ([]kv, bool) {
	var out []kv
	for _, part := range strings.Split(s, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		out = append(out, kv{k, v})
	}
	return out, true
}
