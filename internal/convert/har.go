// Package convert turns a recording (a browser's HAR export, or one curl
// command) into a stampede plan: the requests in order, the recorded pauses
// as think steps, and values the server handed out and the client sent
// back (tokens, ids) turned into captures and templates, so the plan keeps
// working when the server hands out different ones.
package convert

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// harParam is a posted field; a file part has a fileName (and, from most
// recorders, no content).
type harParam struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	FileName    string `json:"fileName"`
	ContentType string `json:"contentType"`
}

type harEntry struct {
	Started string   `json:"startedDateTime"`
	Time    *float64 `json:"time"`
	Request struct {
		Method   string  `json:"method"`
		URL      string  `json:"url"`
		Headers  []harNV `json:"headers"`
		PostData *struct {
			MimeType string     `json:"mimeType"`
			Text     string     `json:"text"`
			Params   []harParam `json:"params"`
			// Not in HAR 1.2, but some recorders write binary bodies so.
			Encoding string `json:"encoding"`
		} `json:"postData"`
	} `json:"request"`
	Response struct {
		Status  int     `json:"status"`
		Headers []harNV `json:"headers"`
		Content struct {
			Size     int    `json:"size"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Encoding string `json:"encoding"`
		} `json:"content"`
	} `json:"response"`
	// Chromium's DevTools export says what kind of resource it was.
	ResourceType string `json:"_resourceType"`
	// Chromium's frames of a WebSocket connection (harws.go).
	WebSocketMessages []harWSMessage `json:"_webSocketMessages"`
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
	// multipart: the body is multipart/form-data, field by field.
	multipart   []mpart
	isMultipart bool

	status      int
	respHeaders []kv
	respBody    []byte
	respCT      string
	// respUnrecorded: the response had a body the recording left out, so
	// it may have handed out a value later requests send.
	respUnrecorded bool

	start    time.Time // zero when not recorded
	duration time.Duration
	hasDur   bool
	resource string // HAR _resourceType, lower case
	// rawBody: send the body as its text even where it is JSON (curl's
	// bytes, which json: would send otherwise).
	rawBody bool
	// fromCurl: the headers were typed (or copied) for this one request,
	// so a Cookie among them is the user's, not a jar's.
	fromCurl bool
	// timeout is curl's --max-time: the step's timeout (0: the default).
	timeout time.Duration
	// redirects is the step's redirect limit as plan text ("": the
	// plan's default, which follows them).
	redirects string
}

type kv struct{ name, value string }

// mpart is a multipart field; file names a file part and path, when set,
// the file on disk that holds its content.
type mpart struct {
	name, value       string
	file, ctype, path string
}

// parseHAR reads a HAR file's entries; notes say what was left out that
// the user could not tell from the plan.
func parseHAR(data []byte) (xs []*exchange, ws []*wsRecording, notes []string, err error) {
	var f harFile
	if err := json.Unmarshal(withoutBOM(data), &f); err != nil {
		return nil, nil, nil, fmt.Errorf("not a HAR file: %v", err)
	}
	if len(f.Log.Entries) == 0 {
		return nil, nil, nil, fmt.Errorf("the HAR file has no entries (log.entries is empty or missing)")
	}
	var out []*exchange
	for i := range f.Log.Entries {
		e := &f.Log.Entries[i]
		if e.isWebSocket() {
			r, note := harWebSocket(i, e)
			if note != "" {
				notes = append(notes, note)
			}
			if r != nil {
				ws = append(ws, r)
			}
			continue
		}
		u, note := harURL(i, e)
		if note != "" {
			notes = append(notes, note)
		}
		if u == nil {
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
		if err := x.harRequestBody(i, e); err != nil {
			return nil, nil, nil, err
		}
		x.harResponseBody(e)
		x.harTiming(e)
		out = append(out, x)
	}
	if len(out) == 0 && len(ws) == 0 {
		return nil, nil, notes, fmt.Errorf("the HAR file has no http(s) requests")
	}
	return out, ws, notes, nil
}

// withoutBOM drops a UTF-8 byte order mark, which Windows tools (and
// some HAR exporters) write before the JSON; Go's decoder refuses it.
func withoutBOM(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
}

// harURL is the entry's URL, or nil for one that was never sent over the
// network or does not parse (then with a note saying so).
func harURL(i int, e *harEntry) (*url.URL, string) {
	u, err := url.Parse(e.Request.URL)
	if err != nil {
		// The URL itself is not repeated: it may hold credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Sprintf("entry %d (%s): left out: its URL does not parse (%v)", i+1, strings.ToUpper(e.Request.Method), err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// data:, blob:, chrome-extension: and the like were never sent
		// over the network.
		return nil, ""
	}
	return u, ""
}

// harRequestBody takes the entry's postData: text (maybe base64),
// multipart params, or a form.
func (x *exchange) harRequestBody(i int, e *harEntry) error {
	if pd := e.Request.PostData; pd != nil {
		x.bodyCT = pd.MimeType
		switch {
		case pd.Text != "" && strings.EqualFold(pd.Encoding, "base64"):
			b, err := base64.StdEncoding.DecodeString(pd.Text)
			if err != nil {
				return fmt.Errorf("entry %d (%s %s): postData.text is not valid base64: %v", i+1, x.method, x.u.Redacted(), err)
			}
			x.body = b
		case pd.Text != "":
			x.body = []byte(pd.Text)
		case len(pd.Params) > 0 && mediaType(pd.MimeType) == "multipart/form-data":
			x.isMultipart = true
			for _, p := range pd.Params {
				x.multipart = append(x.multipart, mpart{name: p.Name, value: p.Value, file: p.FileName, ctype: p.ContentType})
			}
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
	return nil
}

// harResponseBody keeps the recorded answer, searched later for values
// the next requests send back.
func (x *exchange) harResponseBody(e *harEntry) {
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
	x.respUnrecorded = c.Text == "" && c.Size > 0 && !staticType(x.respCT)
}

// staticType says a response is an image, font, stylesheet or media, which
// hands out no id a request sends back.
func staticType(ct string) bool {
	ct = strings.ToLower(ct)
	for _, p := range []string{"image/", "font/", "audio/", "video/", "text/css"} {
		if strings.HasPrefix(ct, p) {
			return true
		}
	}
	return false
}

// harTiming keeps when the request started and how long it took, for the
// think times between steps.
func (x *exchange) harTiming(e *harEntry) {
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

// maxJSONDepth is the deepest nesting of a recorded JSON body that is
// read as JSON. Walking a body keeps the path to every value, so a body
// nested thousands deep cost memory in the square of its depth (8,000
// levels took 763 MB, 100,000 levels in a 200 KB file more than 22 GB);
// no API nests so deep, and a deeper body is kept as text.
const maxJSONDepth = 100

var errJSONTooDeep = fmt.Errorf("JSON nested more than %d levels deep", maxJSONDepth)

// jsonTooDeep tells, in one pass and without recursion, whether b's
// arrays and objects nest deeper than maxJSONDepth; brackets in strings
// do not count.
func jsonTooDeep(b []byte) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > maxJSONDepth {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
