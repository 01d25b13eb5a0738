package vu

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/testserver"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

func cannedServer(tb testing.TB, answer string) string {
	return "http://" + testserver.Canned(tb, answer)
}

func userFor(tb testing.TB, yaml string, base string) (*User, *Scenario) {
	p, err := plan.Parse("bench.yaml", []byte(yaml), nil)
	if err != nil {
		tb.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/bench", nil)
	if err != nil {
		tb.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	shared := httpc.NewShared(httpc.Options{})
	u := prog.NewUser(1, shared.NewTransport(), rec)
	tb.Cleanup(u.Close)
	return u, prog.ScenarioFor(0)
}

// BenchmarkIterationStaticGET is one iteration of a one-step plan: render,
// send, read, judge, record. After warm-up it must not allocate.
func BenchmarkIterationStaticGET(b *testing.B) {
	base := cannedServer(b, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!")
	u, sc := userFor(b, `
target: `+base+`
defaults: {headers: {Accept: "*/*"}}
scenarios:
  s:
    steps:
      - get: /
        expect: {status: 200}
load: {stages: [{duration: 1s, users: 1}]}
`, base)
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
}

// BenchmarkIterationTemplatedPOST renders a header and a JSON body from
// data and a capture each iteration.
func BenchmarkIterationTemplatedPOST(b *testing.B) {
	base := cannedServer(b, "HTTP/1.1 201 Created\r\nContent-Length: 17\r\n\r\n{\"id\":\"abc-123\"}\n")
	u, sc := userFor(b, `
target: `+base+`
scenarios:
  s:
    steps:
      - name: create
        post: /items/{{ vu }}
        headers: {X-Iter: "{{ iter }}"}
        json: {n: "{{ rand_int(1, 9) }}", who: "{{ vu }}"}
        capture: {id: {header: Content-Length}}
        expect: {status: 201}
load: {stages: [{duration: 1s, users: 1}]}
`, base)
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
}
