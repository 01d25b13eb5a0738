package vu

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/proto/ws"
)

// A wait step's matcher and an HTTP step's expect: json read the same
// document through one walker, so they agree on every path and value:
// before, the matcher kept an object's raw text ({"big": 9007…} with its
// space) where the HTTP check compared compact JSON, and only one of them
// matched.
func TestConnectionMatchAgreesWithHTTPCheck(t *testing.T) {
	base := cannedServer(t, bigNumbersAnswer)
	body := []byte(bigNumbersAnswer[strings.Index(bigNumbersAnswer, "\r\n\r\n")+4:])
	cases := []struct {
		path, equals string
		want         bool
	}{
		{"id", "1234567890123456789", true},
		{"id", "1234567890123456800", false},
		{"price", "1.50", true},
		{"price", "1.5", false},
		{"n.big", "9007199254740993", true},
		{"n", `{"big":9007199254740993}`, true},
		{"n", `{"big": 9007199254740993}`, false},
	}
	for _, tc := range cases {
		m := ws.Matcher{Path: strings.Split(tc.path, "."), Equals: tc.equals}
		if got := m.Match(body); got != tc.want {
			t.Errorf("wait for %s = %s: matched %v, want %v", tc.path, tc.equals, got, tc.want)
		}
		u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: get, get: /order, expect: {json: {`+strconv.Quote(tc.path)+`: `+strconv.Quote(tc.equals)+`}}}
load: {stages: [{duration: 1s, users: 1}]}
`, base, metrics.ErrorOptions{})
		u.Iterate(sc, time.Time{}, Stop{Soft: make(chan struct{})})
		if passed := len(rec.Snapshot().Steps[0].Errors) == 0; passed != tc.want {
			t.Errorf("expect json %s = %s over HTTP: passed %v, want %v", tc.path, tc.equals, passed, tc.want)
		}
	}
}
