package vu

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// tenLines is a 10-line script of the usual kind: read captures, vars
// and the response, compute, set captures and a header.
const tenLines = `vars: {key: k3y, region: eu}
scenarios:
  s:
    steps:
      - get: /token
        capture: {token: {json: token}}
      - name: sign
        sets: [payload, sig]
        script: |
          const t = captures.token;
          const region = vars.region;
          let n = 0;
          for (let i = 0; i < t.length; i++) n += t.charCodeAt(i);
          const payload = t + ":" + region + ":" + n;
          set("payload", payload);
          set("sig", payload.length > 3 ? "ok" : "short");
          header("X-Region", region);
          if (response.status !== 200) fail("status " + response.status);
          const done = true;
      - post: /signed
        headers: {X-Signature: "{{ sig }}"}
        body: "{{ payload }}"
`

// signLines is a straight 10-line signing script, the common case.
const signLines = `vars: {key: k3y, region: eu}
scenarios:
  s:
    steps:
      - get: /token
        capture: {token: {json: token}}
      - name: sign
        sets: [payload, sig]
        script: |
          const t = captures.token;
          const region = vars.region;
          const ts = "1700000000";
          const payload = t + ":" + region + ":" + ts;
          const sig = hmac_sha256(vars.key, payload);
          set("payload", payload);
          set("sig", sig);
          header("X-Region", region);
          header("X-Timestamp", ts);
          if (response.status !== 200) fail("status " + response.status);
      - post: /signed
        headers: {X-Signature: "{{ sig }}"}
        body: "{{ payload }}"
`

// BenchmarkScriptCall is one call of a 10-line script step on a pooled
// runtime, after the user's last response (the floor: 5µs): "loop" walks
// the token's characters in JavaScript, "sign" is straight-line code with
// an HMAC, and "empty" is the cost of a call itself.
func BenchmarkScriptCall(b *testing.B) {
	empty := strings.Replace(signLines, "const t = captures.token;", "return;", 1)
	for _, bc := range []struct{ name, yaml string }{{"loop", tenLines}, {"sign", signLines}, {"empty", empty}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := tokenServer(b)
			u, sc := scriptUser(b, bc.yaml, srv)
			st := sc.Steps[1]
			if st.Kind != plan.StepScript {
				b.Fatalf("step 1 is %v", st.Kind)
			}
			stop := Stop{Soft: make(chan struct{})}
			u.Iterate(sc, time.Time{}, stop)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if u.runScript(st) != scriptOK {
					b.Fatal("script failed")
				}
				u.script.headers = u.script.headers[:0]
			}
		})
	}
}

func scriptUser(tb testing.TB, yaml, base string) (*User, *Scenario) {
	p, err := plan.Parse("bench.yaml", []byte("target: "+base+"\n"+yaml+"load: {stages: [{duration: 1s, users: 1}]}\n"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/bench", nil)
	if err != nil {
		tb.Fatal(err)
	}
	u := prog.NewUser(1, httpc.NewShared(httpc.Options{}).NewTransport(), metrics.New(prog.Steps, 1))
	tb.Cleanup(u.Close)
	return u, prog.ScenarioFor(0)
}

// TestScriptMemoryPerUser: 1,000 users that have each run a scenario with
// a script step hold at most 64 KiB each more than 1,000 users of the same
// scenario without it, measured as live heap after a collection. The
// runtimes are pooled, so the difference is the users' own script state.
func TestScriptMemoryPerUser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2,000 iterations")
	}
	const users = 1000
	base := tokenServer(t)
	without := `vars: {key: k3y, region: eu}
scenarios:
  s:
    steps:
      - get: /token
        capture: {token: {json: token}}
      - post: /signed
        headers: {X-Region: eu}
        body: "{{ token }}"
`
	heapOf := func(yaml string) (uint64, []*User) {
		p, err := plan.Parse("m.yaml", []byte("target: "+base+"\n"+yaml+"load: {stages: [{duration: 1s, users: 1}]}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := Compile(p, base, "stampede/test", nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := metrics.New(prog.Steps, 1)
		sh := httpc.NewShared(httpc.Options{NewConnPerRequest: true})
		defer sh.Close()
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		us := make([]*User, users)
		stop := Stop{Soft: make(chan struct{})}
		for i := range us {
			us[i] = prog.NewUser(int64(i+1), sh.NewTransport(), rec)
			if err := us[i].Iterate(prog.ScenarioFor(0), time.Time{}, stop); err != nil {
				t.Fatal(err)
			}
			us[i].Close()
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		if st := rec.Snapshot().Steps; st[len(st)-1].Requests != users || st[len(st)-1].Failed != 0 {
			t.Fatalf("last step: %d requests, %d failed %v", st[len(st)-1].Requests, st[len(st)-1].Failed, st[len(st)-1].Errors)
		}
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), us
	}
	heapOf(without) // once first, so lazily made globals count in neither
	plain, keep1 := heapOf(without)
	scripted, keep2 := heapOf(tenLines)
	runtime.KeepAlive(keep1)
	runtime.KeepAlive(keep2)
	perUser := (int64(scripted) - int64(plain)) / users
	t.Logf("1,000 users: %d KiB without a script step, %d KiB with; %d bytes more per user", plain>>10, scripted>>10, perUser)
	if perUser > 64<<10 {
		t.Fatalf("a script step costs %d bytes per user, want at most 64 KiB", perUser)
	}
}

// tokenServer answers every request 200 with a token.
func tokenServer(tb testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"token":"t-1"}`))
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}
