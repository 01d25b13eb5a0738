package convert

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// FuzzHAR: whatever a HAR file holds, the converter either says what is
// wrong with it or writes a plan that stampede's loader takes.
func FuzzHAR(f *testing.F) {
	f.Add([]byte(`{"log":{"entries":[{"startedDateTime":"2026-11-24T00:00:00Z","time":5,"request":{"method":"GET","url":"http://a.test/x?q=1","headers":[]},"response":{"status":200,"headers":[],"content":{"mimeType":"application/json","text":"{\"id\":\"abc123\"}"}}},{"startedDateTime":"2026-11-24T00:00:01Z","time":5,"request":{"method":"POST","url":"http://a.test/y/abc123","headers":[{"name":"X-Id","value":"abc123"}],"postData":{"mimeType":"application/json","text":"{\"id\":\"abc123\",\"n\":1}"}},"response":{"status":302,"headers":[{"name":"Location","value":"/z"}],"content":{}}}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"request":{"method":"PUT","url":"https://a.test/{{x}}/${HOME}","headers":[{"name":"A","value":"${X} {{ y }}"}],"postData":{"mimeType":"text/plain","text":"$${a} {{"}},"response":{"status":0,"content":{"text":"e30=","encoding":"base64"}}}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"request":{"method":"POST","url":"http://a.test/f","postData":{"params":[{"name":"a b","value":"c&d"}]}},"response":{"status":200,"content":{"mimeType":"text/html","text":"<input name=\"tok\" value=\"ZZZZ9999\">"}}},{"request":{"method":"POST","url":"http://a.test/g","postData":{"mimeType":"application/x-www-form-urlencoded","text":"tok=ZZZZ9999&x=%zz"}},"response":{"status":200}}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"request":{"method":"GET","url":"http://a.test/s"},"response":{"status":200,"headers":[{"name":"Set-Cookie","value":"csrftoken=Zq8w1TkP0aXv; Path=/"}],"content":{"mimeType":"application/json","text":"{\"order_id\":987654,\"ref\":\"o\\\"1\\\\2ab12cd34\"}"}}},{"request":{"method":"POST","url":"http://a.test/u","headers":[{"name":"X-CSRFToken","value":"Zq8w1TkP0aXv"}],"postData":{"mimeType":"multipart/form-data; boundary=X","params":[{"name":"t","value":"987654"},{"name":"f","fileName":"a.txt"}]}},"response":{"status":404}},{"request":{"method":"POST","url":"http://a.test/p","postData":{"mimeType":"application/json","text":"{\"o\":987654,\"r\":\"o\\\"1\\\\2ab12cd34\"}"}},"response":{"status":304}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := HAR(data, Options{MinThink: time.Millisecond})
		if err != nil {
			return
		}
		if _, err := plan.Parse("fuzz.yaml", out, func(string) (string, bool) { return "", false }); err != nil {
			t.Fatalf("converted plan does not load: %v\n%s", err, out)
		}
	})
}

// FuzzCurl: a command line converts to a plan the loader takes, or to an
// error.
func FuzzCurl(f *testing.F) {
	f.Add(`curl 'https://a.test/v1?x=1' -H 'X-A: b' --data-raw '{"a":1}' --compressed`)
	f.Add(`curl -G -d q=a+b -u u:p http://h.test/s -H $'X-N: it\'s\x41'`)
	f.Add(`curl -X PATCH "http://h.test/\$x" -d 'a=${HOME}&b={{c}}' -b 'k=v'`)
	f.Add(`curl -sSm 5 -o /dev/null -F 'a=b;type=text/plain' -A ua -e r -H 'Host: x' --url-query 'k=v' http://u:p@h.test/x`)
	f.Fuzz(func(t *testing.T, cmd string) {
		out, _, err := Curl(cmd, Options{})
		if err != nil {
			return
		}
		// Credentials become ${ENV} references the user sets (curlauth.go).
		if _, err := plan.Parse("fuzz.yaml", out, func(string) (string, bool) { return "set-by-the-user", true }); err != nil {
			t.Fatalf("converted plan does not load: %v\n%s", err, out)
		}
	})
}
