package vu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// BenchmarkIterationVotingFlow is one iteration of the seed's voting flow
// (bench/voting/flow.yaml): a CSV row, GET the parties with a capture
// from the JSON, POST a vote with two headers from the row and a JSON
// body from the capture, the status of each and the vote's JSON checked.
// One canned answer serves both requests (so the POST checks 200), which
// keeps the server's cost the same as the static GET's: the difference
// between the two benchmarks is the flow's own cost, per iteration of two
// requests.
func BenchmarkIterationVotingFlow(b *testing.B) {
	body := `{"election":2026,"parties":[{"id":"p1","name":"Blue"},{"id":"p2","name":"Green"}],"status":"counted"}`
	base := cannedServer(b, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	dir := b.TempDir()
	var rows strings.Builder
	rows.WriteString("voter_id,district_id\n")
	for i := range 1000 {
		fmt.Fprintf(&rows, "V%06d,d%d\n", i, i%40)
	}
	if err := os.WriteFile(filepath.Join(dir, "voters.csv"), []byte(rows.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	pf := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(pf, []byte(`
target: `+base+`
defaults: {headers: {Accept: application/json}}
data: {voters: {file: voters.csv, pick: sequential}}
scenarios:
  voter:
    steps:
      - name: GET parties
        get: /elections/2026/parties
        capture: {party: {json: "parties.0.id"}}
        expect: {status: 200}
      - name: POST vote
        post: /votes
        headers:
          voter-id: "{{ data.voters.voter_id }}"
          election-district-id: "{{ data.voters.district_id }}"
        json: {partyId: "{{ party }}"}
        expect: {status: 200, json: {status: counted}}
load: {stages: [{duration: 1s, users: 1}]}
`), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := plan.LoadFileWith(pf, plan.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	u := prog.NewUser(1, httpc.NewShared(httpc.Options{}).NewTransport(), rec)
	b.Cleanup(u.Close)
	sc := prog.ScenarioFor(0)
	stop := Stop{Soft: make(chan struct{})}
	if err := u.Iterate(sc, time.Time{}, stop); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
	b.StopTimer()
	if tot := rec.Snapshot().Totals; tot.Failed != 0 {
		b.Fatalf("%d of %d requests failed", tot.Failed, tot.Requests)
	}
}
