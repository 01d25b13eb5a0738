package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const monitorBase = "target: http://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"

func monitorEnv(name string) (string, bool) {
	v, ok := map[string]string{"PGPASSWORD": "pw-from-env"}[name]
	return v, ok
}

func TestMonitorsSyntax(t *testing.T) {
	src := monitorBase + `monitors:
  - postgres: postgres://stampede:${PGPASSWORD}@127.0.0.1:5432/stampede
    name: main
    required: true
    interval: 1s
    timeout: 2s
    queries: {votes: "SELECT count(*) FROM stampede_demo_votes"}
  - redis: 127.0.0.1:6379
  - prometheus: http://127.0.0.1:9100/metrics
    name: node
    select: [node_load1, 'node_cpu_seconds_total{mode="idle"}']
  - prometheus: http://127.0.0.1:9200/metrics
    select: up
  - process: nginx
  - process: 4242
    name: worker
  - host
`
	p, err := Parse("p.yaml", []byte(src), monitorEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := []MonitorSpec{
		{Kind: "postgres", Target: "postgres://stampede:pw-from-env@127.0.0.1:5432/stampede", Name: "main", Required: true,
			Interval: time.Second, Timeout: 2 * time.Second, Queries: map[string]string{"votes": "SELECT count(*) FROM stampede_demo_votes"},
			Pos: Pos{File: "p.yaml", Line: 5, Col: 5}},
		{Kind: "redis", Target: "127.0.0.1:6379", Pos: Pos{File: "p.yaml", Line: 11, Col: 5}},
		{Kind: "prometheus", Target: "http://127.0.0.1:9100/metrics", Name: "node",
			Select: []string{"node_load1", `node_cpu_seconds_total{mode="idle"}`}, Pos: Pos{File: "p.yaml", Line: 12, Col: 5}},
		{Kind: "prometheus", Target: "http://127.0.0.1:9200/metrics", Select: []string{"up"}, Pos: Pos{File: "p.yaml", Line: 15, Col: 5}},
		{Kind: "process", Target: "nginx", Pos: Pos{File: "p.yaml", Line: 17, Col: 5}},
		{Kind: "process", Target: "4242", Name: "worker", Pos: Pos{File: "p.yaml", Line: 18, Col: 5}},
		{Kind: "host", Pos: Pos{File: "p.yaml", Line: 20, Col: 5}},
	}
	if !reflect.DeepEqual(p.Monitors, want) {
		t.Errorf("monitors:\n got %+v\nwant %+v", p.Monitors, want)
	}
	// The password came from the environment: the source the result keeps
	// must still say ${PGPASSWORD}.
	if strings.Contains(string(p.Source), "pw-from-env") || !strings.Contains(string(p.Source), "${PGPASSWORD}") {
		t.Errorf("Source leaks the expanded password or lost the reference:\n%s", p.Source)
	}
	labels := []string{"postgres[main]", "redis", "prometheus[node]", "prometheus", "process[nginx]", "process[worker]", "host"}
	for i, m := range p.Monitors {
		if m.Label() != labels[i] {
			t.Errorf("monitor %d label %q, want %q", i, m.Label(), labels[i])
		}
	}
}

func TestMonitorsErrors(t *testing.T) {
	cases := []struct {
		yaml string
		err  string
		why  string
	}{
		{"monitors: [{postgress: postgres://x@h/db}]", `p.yaml:4:13: unknown key "postgress" in monitor: did you mean "postgres"?`, "typo in the kind is hinted, and not also reported as no kind"},
		{"monitors: [{redis: 127.0.0.1:6379, intervall: 2s}]", `unknown key "intervall" in monitor: did you mean "interval"?`, "typo in an option"},
		{"monitors: [redis]", `p.yaml:4:12: monitor redis needs a target: write - redis: 127.0.0.1:6379`, "bare kind that needs a target"},
		{"monitors: [hots]", `unknown monitor "hots": did you mean "host"?`, "bare unknown kind"},
		{"monitors: [{name: x}]", `monitor has no kind: expected one of postgres, redis, prometheus, process, host`, "options without a kind"},
		{"monitors: [{redis: a:1, process: nginx}]", `p.yaml:4:25: one monitor per list item: this one has both redis and process`, "two kinds in one entry"},
		{"monitors: [{host: me}]", `monitor host takes no target`, "host with a target"},
		{"monitors: [{redis: ''}]", `monitor redis needs a target, such as redis: 127.0.0.1:6379`, "empty target"},
		{"monitors: [{redis: 'a:1', select: [x]}]", `select applies only to prometheus monitors, not redis`, "select on the wrong kind"},
		{"monitors: [{redis: 'a:1', queries: {x: SELECT 1}}]", `queries apply only to postgres monitors, not redis`, "queries on the wrong kind"},
		{"monitors: [{postgres: 'postgres://h/db', queries: {Bad-Name: SELECT 1}}]", `bad query name "Bad-Name"`, "query name that cannot key a series"},
		{"monitors: [{postgres: 'postgres://h/db', queries: {n: ''}}]", `query "n" is empty`, "empty query"},
		{"monitors: [{redis: 'a:1', interval: 10ms}]", `bad interval "10ms": monitors sample at most every 100ms`, "interval below the minimum"},
		{"monitors: [{redis: 'a:1', interval: 5}]", `bad duration "5": expected a number with a unit`, "interval without a unit"},
		{"monitors: [{redis: 'a:1', required: maybe}]", `bad required "maybe": expected true or false`, "required not a boolean"},
		{"monitors:\n  - redis: a:1\n  - redis: b:2\n", `p.yaml:6:5: monitor redis given twice (first at line 5): give one of them a name`, "same label twice"},
		{"monitors: [{process: self}]", `reserved for the generator's own process`, "self is the generator"},
		{"monitors: [{process: 'my server'}]", `process "my server" cannot key a series: add name:`, "process name with a space"},
		{"monitors: [{postgres: 'postgres://u:${NOPE}@h/db'}]", `environment variable NOPE is not set`, "unset environment variable"},
		{"monitors: {redis: a:1}", `bad monitors: expected a list, found a mapping`, "not a list"},
		{"monitors: [[redis]]", `bad monitor: expected host or a mapping`, "nested list"},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(monitorBase+c.yaml), monitorEnv)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v\nwant it to contain %q", c.why, err, c.err)
			continue
		}
		if strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s: want one problem, got:\n%v", c.why, err)
		}
	}
}
