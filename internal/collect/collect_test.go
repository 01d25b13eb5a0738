package collect

import (
	"context"
	"errors"
	"math"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"go.uber.org/goleak"
)

func TestSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		err  string // "" = valid
	}{
		{Spec{Kind: "host"}, ""},
		{Spec{Kind: "postgres", Target: "postgres://u:p@h/db"}, ""},
		{Spec{Kind: "redis", Target: "127.0.0.1:6379", Interval: 500 * time.Millisecond}, ""},
		{Spec{Kind: "process", Target: "nginx"}, ""},
		{Spec{Kind: "prometheus", Target: "http://h:9100/metrics", Select: []string{`up`, `x{a="b",c=~"d.*"}`}}, ""},
		// A kind nobody implements, and none at all.
		{Spec{Kind: "mysql", Target: "x"}, `unknown kind "mysql"`},
		{Spec{}, "kind missing"},
		// Every networked kind needs to know where to look.
		{Spec{Kind: "redis"}, "needs a target"},
		// host is this machine; a target there is a mistake worth flagging.
		{Spec{Kind: "host", Target: "db1"}, "takes no target"},
		// Sampling faster than 100ms would make the monitor itself load.
		{Spec{Kind: "host", Interval: time.Millisecond}, "below the minimum"},
		{Spec{Kind: "redis", Target: "h:1", Select: []string{"x"}}, "only to prometheus"},
		{Spec{Kind: "redis", Target: "h:1", Queries: map[string]string{"x": "select 1"}}, "only to postgres"},
		{Spec{Kind: "postgres", Target: "h", Queries: map[string]string{"Bad Name": "select 1"}}, "query name"},
		{Spec{Kind: "prometheus", Target: "http://h/m", Select: []string{`x{a="b"`}}, "select"},
		{Spec{Kind: "prometheus", Target: "h:9100"}, "not an http(s) URL"},
		// Brackets in a name would make keys like process[a]b].cpu_pct unparseable.
		{Spec{Kind: "process", Target: "a]b"}, "give it a name"},
		{Spec{Kind: "host", Name: "a b"}, "may hold only"},
	} {
		err := tc.spec.Validate()
		if tc.err == "" && err != nil {
			t.Errorf("%+v: unexpected %v", tc.spec, err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: error %v, want mention of %q", tc.spec, err, tc.err)
		}
	}
	if err := checkSpecs([]Spec{{Kind: "host"}, {Kind: "host"}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate host: %v", err)
	}
	if err := checkSpecs([]Spec{{Kind: "host"}, {Kind: "host", Name: "b"}}); err != nil {
		t.Errorf("named second host: %v", err)
	}
}

func TestLabelAndParseSpec(t *testing.T) {
	for in, want := range map[string]string{
		"host":                    "host",
		"redis=127.0.0.1:6379":    "redis",
		"process=nginx":           "process[nginx]",
		"process=1234":            "process[1234]",
		"postgres=host=db user=x": "postgres",
	} {
		sp, err := ParseSpec(in)
		if err != nil || sp.Label() != want {
			t.Errorf("ParseSpec(%q) = %q, %v; want label %q", in, sp.Label(), err, want)
		}
	}
	sp, _ := ParseSpec("postgres=host=db password=hunter2")
	if sp.Target != "host=db password=hunter2" {
		t.Errorf("everything after the first = is the target, got %q", sp.Target)
	}
	if l := SelfSpec().Label(); l != "process[self]" {
		t.Errorf("self label %q", l)
	}
	if s := (Spec{Kind: "postgres", Name: "orders", Target: "postgres://u:hunter2@h/db"}).String(); strings.Contains(s, "hunter2") || !strings.HasPrefix(s, "postgres[orders] ") {
		t.Errorf("String() = %q", s)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cr%40t@db:5432/x?sslmode=disable": "postgres://app:xxxxx@db:5432/x?sslmode=disable",
		"redis://:pw@127.0.0.1:6379/0":                      "redis://:xxxxx@127.0.0.1:6379/0",
		"http://h:9100/metrics?token=abc&x=1":               "http://h:9100/metrics?token=xxxxx&x=1",
		"host=db user=app password='a b' dbname=x":          "host=db user=app password=xxxxx dbname=x",
		"host=db password=plain":                            "host=db password=xxxxx",
		"127.0.0.1:6379":                                    "127.0.0.1:6379",
		"http://user@h/metrics":                             "http://user@h/metrics",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	// Error text may quote the password raw or URL-escaped; both go.
	sec := secrets("postgres://app:s3cr%40t@db/x")
	msg := scrub("auth failed for s3cr@t (s3cr%40t)", sec)
	if strings.Contains(msg, "s3cr") {
		t.Errorf("scrub left a secret: %q (secrets %q)", msg, sec)
	}
	if got := secrets("host=db password='x y'"); len(got) != 1 || got[0] != "x y" {
		t.Errorf("dsn secrets %q", got)
	}
}

func TestRecorder(t *testing.T) {
	r := recorder{series: map[string]*series{}}
	e := &emitter{}
	step := func(t float64, g, c, num, den float64) {
		e.points = e.points[:0]
		e.gauge("g", "count", g)
		e.rate("c", "1/s", c, 1)
		e.ratio("r", "ratio", num, den, 1)
		r.record(t, e.points)
	}
	step(0, 5, 100, 0, 0)
	step(1, 6, 150, 9, 10) // 50/s; 9 of 10
	step(2, 7, 150, 9, 10) // no change: rate 0, ratio undefined (nothing looked up)
	step(4, 8, 10, 10, 20) // counter reset: counts from zero over 2 s
	step(5, math.NaN(), 20, 10, 20)
	out := map[string]result.MonitorSeries{}
	r.copyInto(out, "x")
	check := func(key string, wantT, wantV []float64) {
		t.Helper()
		s := out[key]
		if len(s.T) != len(wantT) || len(s.V) != len(wantV) {
			t.Fatalf("%s = %+v, want t=%v v=%v", key, s, wantT, wantV)
		}
		for i := range wantT {
			if s.T[i] != wantT[i] || math.Abs(s.V[i]-wantV[i]) > 1e-9 {
				t.Fatalf("%s = %+v, want t=%v v=%v", key, s, wantT, wantV)
			}
		}
	}
	check("x.g", []float64{0, 1, 2, 4}, []float64{5, 6, 7, 8}) // NaN left out
	check("x.c", []float64{1, 2, 4, 5}, []float64{50, 0, 5, 10})
	check("x.r", []float64{1, 4}, []float64{0.9, 0.1})
	if out["x.c"].Unit != "1/s" {
		t.Errorf("unit %q", out["x.c"].Unit)
	}
}

func TestRecorderBounded(t *testing.T) {
	r := recorder{series: map[string]*series{}}
	e := &emitter{}
	const n = MaxPoints*2 + 10
	for i := range n {
		e.points = e.points[:0]
		e.gauge("g", "", float64(i))
		r.record(float64(i), e.points)
	}
	s := r.series["g"]
	if len(s.t) >= MaxPoints || len(s.t) < MaxPoints/4 {
		t.Fatalf("%d points kept of %d, want under %d", len(s.t), n, MaxPoints)
	}
	// The start of the run survives thinning, and points stay in order.
	if s.t[0] != 0 {
		t.Errorf("first point t=%v", s.t[0])
	}
	for i := 1; i < len(s.t); i++ {
		if s.t[i] <= s.t[i-1] {
			t.Fatalf("out of order at %d", i)
		}
	}
	if last := s.t[len(s.t)-1]; last < n-float64(r.stride)-1 {
		t.Errorf("last point t=%v, want near %d", last, n)
	}
}

func TestSummarize(t *testing.T) {
	ser := map[string]result.MonitorSeries{
		"b.x": {Unit: "pct", T: []float64{0, 1, 2, 3, 4}, V: []float64{0, 10, 20, 30, 100}},
		"a.y": {Unit: "bytes", T: []float64{5}, V: []float64{1}}, // outside the window
		"a.z": {Unit: "1/s", T: []float64{2}, V: []float64{7}},
	}
	rows := Summarize(ser, 1, 3)
	if len(rows) != 2 || rows[0].Key != "a.z" || rows[1].Key != "b.x" {
		t.Fatalf("rows %+v", rows)
	}
	if r := rows[1]; r.Min != 10 || r.Max != 30 || r.Avg != 20 || r.N != 3 {
		t.Errorf("b.x %+v", r)
	}
	for _, tc := range []struct {
		unit string
		v    float64
		want string
	}{
		{"pct", 87.54, "87.5%"},
		{"bytes", 3 << 30, "3.0 GiB"},
		{"bytes/s", 512, "512 B/s"},
		{"ratio", 0.99312, "0.993"},
		{"1/s", 1204.4, "1204/s"},
		{"s", 0.25, "0.25s"},
		{"count", 12, "12"},
	} {
		if got := FormatValue(tc.unit, tc.v); got != tc.want {
			t.Errorf("FormatValue(%q, %v) = %q, want %q", tc.unit, tc.v, got, tc.want)
		}
	}
}

// busySink keeps the busy loop from being optimised away.
var busySink int

// ownCPU is the CPU time this process has used.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestProcessSelf(t *testing.T) {
	set, probs, err := Start(context.Background(), []Spec{{Kind: KindProcess, Target: SelfSpec().Target, Name: "self", Interval: 100 * time.Millisecond}}, nil)
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	// Use 600 ms of CPU so cpu_pct has something to see. Counted in CPU
	// time, not wall time: on a machine busy with other work this process
	// may get a fifth of a core, and the loop then runs longer instead of
	// seeing less.
	cpu0 := ownCPU()
	for deadline := time.Now().Add(30 * time.Second); ownCPU()-cpu0 < 600*time.Millisecond && time.Now().Before(deadline); {
		for i := 0; i < 100000; i++ {
			busySink++
		}
	}
	ser, probs := set.Stop()
	if len(probs) > 0 {
		t.Errorf("problems: %+v", probs)
	}
	// A percent of a core, not a fraction: even a fifth of a core shows
	// as 20, where a fraction would be 0.2.
	cpu := ser["process[self].cpu_pct"].Stats(0, 1e9)
	if cpu.N < 3 || cpu.Max < 5 || cpu.Max > float64(100*runtime.NumCPU()+50) {
		t.Errorf("cpu_pct %+v", cpu)
	}
	for _, k := range []string{"rss_bytes", "threads", "fds", "procs"} {
		if st := ser["process[self]."+k].Stats(0, 1e9); st.N == 0 || st.Min <= 0 {
			t.Errorf("%s: %+v", k, st)
		}
	}
	if _, ok := ser["process[self].ctx_switches.voluntary_per_sec"]; !ok {
		t.Errorf("no context switches in %v", keys(ser))
	}
}

func TestProcessByName(t *testing.T) {
	// Two processes of one name are summed, as nginx workers would be.
	var cmds []*exec.Cmd
	for range 2 {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Skip("no sleep binary:", err)
		}
		cmds = append(cmds, c)
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	set, probs, err := Start(context.Background(), []Spec{{Kind: KindProcess, Target: "sleep", Interval: 100 * time.Millisecond}}, nil)
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	waitSamples(t, set, "process[sleep].procs", 2)
	ser, _ := set.Stop()
	if st := ser["process[sleep].procs"].Stats(0, 1e9); st.Min < 2 {
		t.Errorf("procs %+v (other sleeps may run, but ours are two)", st)
	}

	// A name nobody runs: a warning, or an error when required.
	_, probs, err = Start(context.Background(), []Spec{{Kind: KindProcess, Target: "no-such-proc-xyz"}}, nil)
	if err != nil || len(probs) != 1 || probs[0].Severity != SeverityWarn || !strings.Contains(probs[0].Message, `no process named "no-such-proc-xyz"`) {
		t.Errorf("missing process: %v %+v", err, probs)
	}
	set, probs, err = Start(context.Background(), []Spec{{Kind: KindProcess, Target: "no-such-proc-xyz", Required: true}}, nil)
	if err == nil || set != nil || len(probs) != 1 || probs[0].Severity != SeverityError || Fatal(probs) == nil {
		t.Errorf("required missing process: %v %v %+v", set, err, probs)
	}
}

func TestHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	set, probs, err := Start(context.Background(), []Spec{{Kind: KindHost, Interval: 100 * time.Millisecond}}, nil)
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	waitSamples(t, set, "host.cpu.busy_pct", 2)
	ser, probs := set.Stop()
	for _, p := range probs {
		// With tens of thousands of sockets (other tests' load), reading
		// /proc/net/tcp can outlast a 100ms interval; that is reported, and
		// is no failure of the collector.
		if !strings.Contains(p.Message, "took longer") {
			t.Errorf("problem %+v", p)
		}
	}
	// Both ends of each connection are on this machine.
	if st := ser["host.tcp.established"].Stats(0, 1e9); st.Min < 10 {
		t.Errorf("established %+v", st)
	}
	if st := ser["host.tcp.listen"].Stats(0, 1e9); st.Min < 1 {
		t.Errorf("listen %+v", st)
	}
	if st := ser["host.tcp.ephemeral_used_pct"].Stats(0, 1e9); st.Max <= 0 || st.Max > 100 {
		t.Errorf("ephemeral %+v", st)
	}
	for _, k := range []string{"cpu.user_pct", "cpu.system_pct", "cpu.iowait_pct", "cpu.steal_pct", "cpu.busy_pct"} {
		st := ser["host."+k].Stats(0, 1e9)
		if st.N == 0 || st.Min < 0 || st.Max > 100 {
			t.Errorf("%s %+v", k, st)
		}
	}
	for _, k := range []string{"mem.used_bytes", "mem.available_bytes", "load1", "net.loopback_bytes_per_sec", "tcp.time_wait"} {
		if ser["host."+k].Stats(0, 1e9).N == 0 {
			t.Errorf("no %s in %v", k, keys(ser))
		}
	}
}

func TestScanTCP(t *testing.T) {
	const in = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000D9A 00000000     0        0 0 3 0000000000000000
`
	var got []string
	err := scanTCP(strings.NewReader(in), make([]byte, 4096), func(port uint16, st int) {
		got = append(got, tcpStates[st]+":"+strconv.Itoa(int(port)))
	})
	want := "listen:8080 established:40000 time_wait:40001"
	if err != nil || strings.Join(got, " ") != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// stuckCollector ignores its context in sample, like a client library
// wedged in a syscall.
type stuckCollector struct {
	release chan struct{}
	started chan struct{}
	n       int
}

func (c *stuckCollector) open(context.Context) error { return nil }
func (c *stuckCollector) close()                     {}
func (c *stuckCollector) sample(ctx context.Context, e *emitter) error {
	c.n++
	if c.n <= 2 {
		e.gauge("n", "count", float64(c.n))
		return nil
	}
	if c.n == 3 {
		close(c.started)
	}
	<-c.release
	return errors.New("released")
}

func TestStopDoesNotWaitForStuckMonitor(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := &stuckCollector{release: make(chan struct{}), started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	m := newMonitor(Spec{Kind: KindHost, Interval: 100 * time.Millisecond}, func() float64 { return 0 })
	m.c = c
	s := &Set{cancel: cancel, clock: m.clock, monitors: []*monitor{m}}
	go m.loop(ctx)
	<-c.started
	t0 := time.Now()
	ser, probs := s.Stop()
	if d := time.Since(t0); d > stopWait+time.Second {
		t.Errorf("Stop took %v", d)
	}
	if len(ser["host.n"].V) != 2 {
		t.Errorf("series so far: %+v", ser)
	}
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "did not stop") {
		t.Errorf("problems %+v", probs)
	}
	close(c.release) // the wedged call returns; the goroutine must then end
	<-m.done
}

func keys(m map[string]result.MonitorSeries) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
