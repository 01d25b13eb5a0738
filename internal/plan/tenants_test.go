package plan

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/profile"
)

// parseWith parses src with in-memory files.
func parseWith(t *testing.T, src string, files map[string]string) (*Plan, error) {
	t.Helper()
	open := func(name string) (io.ReadCloser, error) {
		for k, v := range files {
			if strings.HasSuffix(name, k) {
				return io.NopCloser(strings.NewReader(v)), nil
			}
		}
		t.Fatalf("unexpected file %s", name)
		return nil, nil
	}
	return parse("p.yaml", []byte(src), nil, open)
}

const tenantBase = `target: http://127.0.0.1:1
tenants: {count: 3}
scenarios:
  customer:
    per_tenant: 2
    steps: [{get: "/r/{{ tenant }}"}]
  waiter:
    per_tenant: 1
    steps: [{get: /w}]
load:
  stages:
    - {duration: 10s, users: 0 -> 50}
    - {duration: 10s, users: 100}
`

func TestPerTenant(t *testing.T) {
	p, err := parseWith(t, tenantBase, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3 users per tenant × 3 tenants; the stages keep their shape.
	if got := p.Load.Stages[1].To; got != 9 {
		t.Errorf("peak users %g, want 9", got)
	}
	if got := p.Load.Stages[0].To; got != 4.5 {
		t.Errorf("ramp end %g, want 4.5 (half the peak, as written)", got)
	}
	if p.Scenarios[0].Weight != 2 || p.Scenarios[1].Weight != 1 {
		t.Errorf("weights %d %d, want the per_tenant counts", p.Scenarios[0].Weight, p.Scenarios[1].Weight)
	}
	// Blocks of 3 users share a tenant, so with the scenario order
	// repeating every 3 users each tenant gets 2 customers and 1 waiter.
	var got []int
	for id := int64(1); id <= 10; id++ {
		got = append(got, p.TenantOf(id))
	}
	if want := []int{1, 1, 1, 2, 2, 2, 3, 3, 3, 1}; !equalInts(got, want) {
		t.Errorf("tenants %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTenantOfWithoutPerTenantIsRoundRobin(t *testing.T) {
	p := &Plan{Tenants: 2}
	if got := []int{p.TenantOf(1), p.TenantOf(2), p.TenantOf(3)}; !equalInts(got, []int{1, 2, 1}) {
		t.Errorf("got %v", got)
	}
	if (&Plan{}).TenantOf(5) != 0 {
		t.Error("no pool, no tenant")
	}
}

func TestByTenant(t *testing.T) {
	files := map[string]string{"tables.csv": "restaurant_id,table\n1,a\n2,b\n1,c\n3,d\n"}
	src := strings.Replace(tenantBase, "tenants:", "data:\n  tables: {file: tables.csv, by_tenant: restaurant_id}\ntenants:", 1)
	p, err := parseWith(t, src, files)
	if err != nil {
		t.Fatal(err)
	}
	ds := p.Data[0]
	if len(ds.TenantRows[1]) != 2 || ds.TenantRows[1][1][1] != "c" || len(ds.TenantRows[3]) != 1 {
		t.Errorf("partition %v", ds.TenantRows)
	}
	cases := []struct {
		name, src, csv, want string
	}{
		{"a tenant without rows", src, "restaurant_id,table\n1,a\n3,d\n",
			`p.yaml:3:41: data source "tables" has no rows for tenant 2 (column restaurant_id): every tenant up to 3 needs at least one row`},
		{"a typo in the column", strings.Replace(src, "by_tenant: restaurant_id", "by_tenant: restaurantid", 1), files["tables.csv"],
			`p.yaml:3:41: by_tenant column "restaurantid" is not in tables.csv: did you mean "restaurant_id"?`},
		{"an id that is not a tenant", src, "restaurant_id,table\n1,a\nx,b\n",
			`p.yaml:3:41: data file tables.csv line 3: restaurant_id is "x", expected a tenant id (a whole number from 1)`},
		{"no pool", strings.Replace(src, "tenants: {count: 3}\n", "", 1), files["tables.csv"],
			`by_tenant needs a tenant pool`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseWith(t, c.src, map[string]string{"tables.csv": c.csv})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %s", err, c.want)
			}
		})
	}
}

func TestPerTenantErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"no pool", strings.Replace(tenantBase, "tenants: {count: 3}\n", "", 1), "p.yaml:4:17: per_tenant needs a tenant pool"},
		{"mixed", strings.Replace(tenantBase, "    per_tenant: 1\n", "", 1), `p.yaml:7:3: scenario "waiter" has no per_tenant but "customer" has`},
		{"open model", strings.NewReplacer("users: 0 -> 50", "rate: 0 -> 50/s", "users: 100", "rate: 100/s").Replace(tenantBase), "per_tenant sets a number of users"},
		{"zero", strings.Replace(tenantBase, "per_tenant: 2", "per_tenant: 0", 1), `bad per_tenant "0"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseWith(t, c.src, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %s", err, c.want)
			}
		})
	}
}

func TestWaves(t *testing.T) {
	src := `target: http://127.0.0.1:1
tenants:
  count: 10
  waves: [{share: 0.3, offset: 0s}, {share: 0.7, offset: 10s}]
scenarios:
  s: {steps: [{get: /}]}
load:
  stages:
    - {duration: 10s, users: 0 -> 100}
    - {duration: 10s, users: 100 -> 0}
`
	p, err := parseWith(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := p.Waves
	if w[0].First != 1 || w[0].Last != 3 || w[1].First != 4 || w[1].Last != 10 {
		t.Fatalf("groups %d-%d, %d-%d", w[0].First, w[0].Last, w[1].First, w[1].Last)
	}
	if w[0].Stages[0].To != 30 || w[1].Stages[0].To != 70 {
		t.Errorf("group peaks %g %g, want 30 and 70", w[0].Stages[0].To, w[1].Stages[0].To)
	}
	// The total: group 1 peaks at 10s as group 2 starts, so the total
	// climbs to 30, then 30 falling + 70 rising, then 70 falling.
	if d := p.Load.Duration(); d != 30*time.Second {
		t.Errorf("duration %v, want 30s (the last wave's end)", d)
	}
	at := func(d time.Duration) float64 { return profile.TargetAt(p.Load.Stages, d) }
	for _, c := range []struct {
		t    time.Duration
		want float64
	}{{5 * time.Second, 15}, {15 * time.Second, 15 + 35}, {20 * time.Second, 70}, {25 * time.Second, 35}} {
		if got := at(c.t); got < c.want-0.01 || got > c.want+0.01 {
			t.Errorf("total at %v = %g, want %g", c.t, got, c.want)
		}
	}
	bad := strings.Replace(src, "share: 0.7", "share: 0.5", 1)
	if _, err := parseWith(t, bad, nil); err == nil || !strings.Contains(err.Error(), "wave shares add up to 0.8") {
		t.Errorf("error %v", err)
	}
}

func TestGatesParse(t *testing.T) {
	src := tenantBase + `gates:
  vary: tenants
  levels: [1, 2, 3]
  ramp: 1s
  hold: 5m
  slo: ["p50 < 200ms", "error_rate < 1.3%"]
`
	p, err := parseWith(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := p.Gates
	if g.Vary != VaryTenants || len(g.Levels) != 3 || g.Hold != 5*time.Minute || g.Ramp != time.Second || len(g.SLO) != 2 {
		t.Fatalf("gates %+v", g)
	}
	if g.SLO[1].Value != "error_rate < 1.3%" || g.SLO[1].Pos.Line != 19 {
		t.Errorf("slo %+v: want the text and its place", g.SLO[1])
	}
	cases := []struct{ name, gates, want string }{
		{"typo in vary", "gates: {vary: user, levels: [1], hold: 1s, slo: [p50 < 1s]}", `bad vary "user": expected users, rate or tenants (did you mean "users"?)`},
		{"bad level", "gates: {vary: users, levels: [1.5], hold: 1s, slo: [p50 < 1s]}", `bad level "1.5": expected a whole number of users`},
		{"bad rate", "gates: {vary: rate, levels: [0/s], hold: 1s, slo: [p50 < 1s]}", `bad rate level "0/s"`},
		{"no hold", "gates: {vary: users, levels: [1], slo: [p50 < 1s]}", "gates has no hold"},
		{"no slo", "gates: {vary: users, levels: [1], hold: 1s}", "gates has no slo"},
	}
	plain := strings.NewReplacer("tenants: {count: 3}\n", "", "    per_tenant: 2\n", "", "    per_tenant: 1\n", "").Replace(tenantBase)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseWith(t, plain+c.gates+"\n", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %s", err, c.want)
			}
		})
	}
	_, err = parseWith(t, plain+"gates: {vary: tenants, levels: [1], hold: 1s, slo: [p50 < 1s]}\n", nil)
	if err == nil || !strings.Contains(err.Error(), "gates vary tenants but the plan has no tenant pool") {
		t.Errorf("error %v", err)
	}
}

func TestAtLevel(t *testing.T) {
	p, err := parseWith(t, tenantBase, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.AtLevel(VaryTenants, 10, 2*time.Second, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if q.Tenants != 10 || len(q.Load.Stages) != 2 || q.Load.Stages[0].To != 30 || q.Load.Stages[1].From != 30 || q.Load.Stages[1].Duration != 5*time.Second {
		t.Errorf("level plan: tenants %d stages %+v", q.Tenants, q.Load.Stages)
	}
	if p.Tenants != 3 || p.Load.Stages[1].To != 9 {
		t.Error("AtLevel changed the plan")
	}
	if _, err := p.AtLevel(VaryUsers, 10, 0, time.Second); err == nil || !strings.Contains(err.Error(), "vary tenants instead") {
		t.Errorf("users level of a per_tenant plan: %v", err)
	}
	plain := strings.NewReplacer("    per_tenant: 2\n", "", "    per_tenant: 1\n", "").Replace(tenantBase)
	p, err = parseWith(t, plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err = p.AtLevel(VaryRate, 250, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if q.Load.Model != Open || q.Load.MaxInFlight != defaultMaxInFlight || len(q.Load.Stages) != 1 || q.Load.Stages[0].From != 250 {
		t.Errorf("rate level of a closed plan: %+v", q.Load)
	}
	q, err = p.AtLevel(VaryUsers, 7, 0, time.Second)
	if err != nil || q.Load.Model != Closed || q.Load.Stages[0].To != 7 {
		t.Errorf("users level: %+v %v", q.Load, err)
	}
}
