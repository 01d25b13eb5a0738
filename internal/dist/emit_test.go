package dist

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

func TestEmitExtractRoundTrip(t *testing.T) {
	want := segResult(t, 1, 3, 500, 1000)
	var log bytes.Buffer
	log.WriteString("Plan: p\nTotal Requests: 500\n") // the summary before it
	if err := Emit(&log, want); err != nil {
		t.Fatal(err)
	}
	log.WriteString("result saved to /tmp/result.json\n")
	got, err := Extract(&log)
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Requests != 500 || got.Run.Segment != want.Run.Segment || got.Totals.LatencyOK.HDR != want.Totals.LatencyOK.HDR {
		t.Errorf("round trip changed the result: %+v", got.Run)
	}
}

// The log stream mixes stdout and stderr, and kubectl can prefix lines
// with timestamps: neither may corrupt the result.
func TestExtractSkipsNoiseAndTimestamps(t *testing.T) {
	want := segResult(t, 0, 2, 300, 50)
	var b bytes.Buffer
	Emit(&b, want)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	var noisy strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&noisy, "2026-01-02T03:04:05.%06dZ %s\n", i, l)
		switch i {
		case 3:
			noisy.WriteString("stopping: no new work starts; requests in flight get the grace period\n")
		case 4:
			noisy.WriteString("abc\n") // short base64-looking noise mid-stream
		}
	}
	got, err := Extract(strings.NewReader(noisy.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Requests != 300 {
		t.Errorf("requests %d, want 300", got.Totals.Requests)
	}
}

func TestExtractFailsLoudly(t *testing.T) {
	var b bytes.Buffer
	Emit(&b, segResult(t, 0, 2, 10, 50))
	full := b.String()
	cases := []struct {
		log  string
		want string
		why  string
	}{
		{"fake logs", "no result between the markers", "the fake clientset's fixed log body"},
		{full[:len(full)/2], "ends inside the result", "a pod cut off while printing"},
		{BeginMarker + "\n" + strings.Repeat("A", 76) + "\n" + EndMarker + "\n", "result in the log", "not gzip"},
	}
	for _, c := range cases {
		_, err := Extract(strings.NewReader(c.log))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.why, err, c.want)
		}
	}
	if _, err := Extract(strings.NewReader("x")); !errors.Is(err, ErrNoEmittedResult) {
		t.Errorf("err = %v, want ErrNoEmittedResult", err)
	}
}

// bigResult is the largest result a segment realistically emits: a 1-hour
// run at 1 s intervals, 50 HTTP steps with latencies over four decades, 8
// operations of 3 connection scenarios, 4 failure classes in every
// interval, 40 monitor series sampled every second, 50 error samples and a
// 20 KB plan. The values are noisy, as measured ones are, so gzip does not
// get an easy ride.
func bigResult(t testing.TB) *result.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	const secs = 3600
	classes := []string{"timeout", "http_5xx", "http_4xx", "connect"}
	lat := func(n int) result.Latency {
		h := result.NewHistogram()
		for i := 0; i < n; i++ {
			v := int64(math.Exp(rng.NormFloat64()*1.2 + 10)) // µs, median ≈ 22 ms
			if err := h.RecordValue(min(max(v, 1), 3_600_000_000)); err != nil {
				t.Fatal(err)
			}
		}
		return result.LatencyOf(h)
	}
	r := &result.Result{
		Schema: result.Schema,
		Tool:   result.Tool{Name: "stampede", Version: "test"},
		Plan:   result.PlanInfo{Name: "big", SHA256: strings.Repeat("ab", 32), Source: strings.Repeat("# a plan line of a big plan, 40 chars\n", 500)},
		Run: result.RunInfo{Model: "open", LatencyFrom: "intended", Segment: result.Segment{Index: 7, Count: 100},
			Started: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), Ended: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC), DurationS: secs},
		Totals:     result.Totals{ByClass: map[string]int64{}},
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
		Monitors:   map[string]result.MonitorSeries{},
	}
	okH, allH := result.NewHistogram(), result.NewHistogram()
	addStep := func(scenario, name, group string, http bool) {
		s := result.Step{Scenario: scenario, Name: name, Group: group, ByClass: map[string]int64{}}
		s.Requests, s.Successful = 20000+int64(rng.IntN(1000)), 20000
		s.Failed = s.Requests - s.Successful
		s.ByClass["timeout"] = s.Failed
		s.LatencyOK, s.LatencyAll = lat(int(s.Successful)), lat(int(s.Requests))
		r.Steps = append(r.Steps, s)
		if !http {
			return
		}
		r.Totals.Requests += s.Requests
		r.Totals.Successful += s.Successful
		r.Totals.Failed += s.Failed
		r.Totals.ByClass["timeout"] += s.Failed
		for _, p := range []struct {
			into *hdr.Histogram
			l    result.Latency
		}{{okH, s.LatencyOK}, {allH, s.LatencyAll}} {
			h, err := p.l.Histogram()
			if err != nil {
				t.Fatal(err)
			}
			p.into.Merge(h)
		}
	}
	for i := 0; i < 50; i++ {
		addStep(fmt.Sprintf("scenario-%d", i%5), fmt.Sprintf("POST /api/v1/orders/{id}/items/%d", i), "", true)
	}
	r.Connections = &result.Connections{}
	for _, sc := range []string{"kitchen", "printer", "phone"} {
		for _, op := range []string{"negotiate", "upgrade", "handshake", "invoke JoinGroup", "push OrderCreated", "push OrderUpdated", "push Ping", "session"} {
			addStep(sc, op, "signalr", false)
		}
		r.Connections.Scenarios = append(r.Connections.Scenarios, result.ConnScenario{Scenario: sc, Protocol: "signalr", Target: 1000,
			Attempts: 1010, Opened: 1000, Failed: 10, ByClass: map[string]int64{"timeout": 10}, PeakOpen: 1000, OpenAtEnd: 990,
			Disconnects: map[string]int64{"client_close": 990, "server_close": 10}, Pushes: map[string]int64{"OrderCreated": 123456, "OrderUpdated": 654321},
			MessagesIn: 800000, MessagesOut: 4000, BytesIn: 123456789, BytesOut: 456789})
	}
	r.Totals.LatencyOK, r.Totals.LatencyAll = result.LatencyOf(okH), result.LatencyOf(allH)
	se := result.Series{IntervalS: 1, Failed: map[string][]int64{}}
	noisy := func(base float64) int64 { return int64(base * (1 + 0.1*rng.NormFloat64()*0.5)) }
	for i := 0; i < secs; i++ {
		se.T = append(se.T, float64(i))
		for _, col := range []*[]int64{&se.Started, &se.Completed, &se.OK, &se.Active, &se.InFlight} {
			*col = append(*col, max(0, noisy(300)))
		}
		se.P50US = append(se.P50US, max(0, noisy(22000)))
		se.P95US = append(se.P95US, max(0, noisy(120000)))
		se.P99US = append(se.P99US, max(0, noisy(400000)))
		se.Dropped = append(se.Dropped, int64(rng.IntN(3)))
		se.LagP99US = append(se.LagP99US, max(0, noisy(150)))
		se.Target = append(se.Target, 300)
		se.Connections = append(se.Connections, max(0, noisy(3000)))
		for _, c := range classes {
			se.Failed[c] = append(se.Failed[c], int64(rng.IntN(5)))
		}
	}
	r.Series = se
	for m := 0; m < 40; m++ {
		ms := result.MonitorSeries{Unit: "count"}
		for i := 0; i < secs; i++ {
			ms.T = append(ms.T, float64(i)+float64(rng.IntN(1000))/1000)
			ms.V = append(ms.V, math.Round(rng.Float64()*1e6)/100)
		}
		r.Monitors[fmt.Sprintf("postgres.metric_%d", m)] = ms
	}
	for i := 0; i < 50; i++ {
		r.Samples = append(r.Samples, result.ErrorSample{Step: fmt.Sprintf("POST /api/v1/orders/{id}/items/%d", i), Class: "timeout",
			Message: strings.Repeat(fmt.Sprintf("context deadline exceeded %d ", i), 8), Count: int64(i)})
	}
	r.Generator.Lag = lat(10000)
	if err := r.Check(); err != nil {
		t.Fatalf("the synthetic result is inconsistent: %v", err)
	}
	return r
}

// The largest realistic result fits a pod's log with room to spare, and
// round-trips whole. The figure is in docs/distributed.md.
func TestEmitLargestRealistic(t *testing.T) {
	want := bigResult(t)
	raw, _ := json.Marshal(want)
	var log bytes.Buffer
	if err := Emit(&log, want); err != nil {
		t.Fatal(err)
	}
	t.Logf("1-hour result: %d KiB of JSON, %d KiB emitted into the log (limit %d KiB, kubelet rotation 10240 KiB)",
		len(raw)/1024, log.Len()/1024, MaxEmit/1024)
	if log.Len() > MaxEmit {
		t.Errorf("the emitted block is %d bytes, past MaxEmit %d", log.Len(), MaxEmit)
	}
	got, err := Extract(&log)
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Requests != want.Totals.Requests || len(got.Monitors) != 40 || len(got.Series.T) != 3600 || len(got.Steps) != 74 {
		t.Errorf("round trip lost parts: %d requests, %d monitors, %d intervals, %d steps", got.Totals.Requests, len(got.Monitors), len(got.Series.T), len(got.Steps))
	}
}

// A result too large for a pod's log is refused where it is made, with
// the way out, rather than printed and cut by log rotation.
func TestEmitRefusesTooLarge(t *testing.T) {
	r := segResult(t, 0, 1, 10, 50)
	// Random bytes do not compress: the plan source alone is past the limit.
	b := make([]byte, MaxEmit)
	rand.NewChaCha8([32]byte{1}).Read(b)
	r.Plan.Source = base64.StdEncoding.EncodeToString(b)
	var log bytes.Buffer
	err := Emit(&log, r)
	if !errors.Is(err, ErrTooLarge) || log.Len() != 0 {
		t.Errorf("err = %v, %d bytes written; want ErrTooLarge and nothing written", err, log.Len())
	}
}

// Lines lost from the middle of the block, or a block whose beginning was
// rotated away, fail with what happened — never a shorter result.
func TestExtractCatchesLostLines(t *testing.T) {
	var b bytes.Buffer
	if err := Emit(&b, bigResult(t)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	// Drop ten full data lines in the middle.
	mid := len(lines) / 2
	lost := strings.Join(append(append([]string{}, lines[:mid]...), lines[mid+10:]...), "\n")
	if _, err := Extract(strings.NewReader(lost)); err == nil || !strings.Contains(err.Error(), "lines were lost") {
		t.Errorf("lost lines: err = %v", err)
	}
	// Rotation: the log read back starts in the middle of the block.
	rotated := strings.Join(lines[mid:], "\n")
	if _, err := Extract(strings.NewReader(rotated)); err == nil || !strings.Contains(err.Error(), "rotated") {
		t.Errorf("rotated log: err = %v", err)
	}
	// One character changed: same length, other hash.
	i := strings.Index(b.String(), "\n"+lines[mid]+"\n") + 5
	bs := append([]byte(nil), b.Bytes()...) // a copy: b stays the good log
	if bs[i] == 'A' {
		bs[i] = 'B'
	} else {
		bs[i] = 'A'
	}
	if _, err := Extract(bytes.NewReader(bs)); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("altered log: err = %v", err)
	}
}
