package metrics

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

func checkAll(t *testing.T, steps []result.Step) {
	t.Helper()
	for _, s := range steps {
		if err := s.CheckErrorCounts(); err != nil {
			t.Fatal(err)
		}
	}
}

// Every failure lands in exactly one message or in other, whatever path
// recorded it, so each class's messages add up to the class.
func TestMessagesSumToClassCounts(t *testing.T) {
	rec := New([]StepInfo{{Scenario: "s", Name: "a"}, {Scenario: "s", Name: "b"}}, 1)
	rec.Configure(ErrorOptions{Top: 3})
	var wg sync.WaitGroup
	for u := int64(1); u <= 8; u++ {
		wg.Add(1)
		go func(u int64) {
			defer wg.Done()
			sh := rec.Shard(u)
			for i := 0; i < 400; i++ {
				switch i % 8 {
				case 0:
					sh.RecordResponse(0, sample.OK, 200, 0)
				case 1:
					sh.Fail(0, sample.ClientError, 409, 0, []byte(`409 Conflict: {"error":"taken"}`))
				case 2:
					// Many distinct bodies: most are cut to other.
					sh.Fail(0, sample.ServerError, 503, 0, []byte(fmt.Sprintf("503 Service Unavailable: request %d-%d", u, i)))
				case 3:
					sh.FailText(1, sample.Check, 200, 0, `body does not contain "counted"`)
				case 4:
					sh.Record(1, sample.Timeout, 0)
				case 5:
					sh.RecordUnfinished(1, sample.Dropped)
				case 6:
					sh.DroppedN(0, 3)
				case 7:
					sh.FailText(1, sample.ConnReset, 0, 0, "read: connection reset by peer")
				}
			}
		}(u)
	}
	wg.Wait()
	snap := rec.Snapshot()
	checkAll(t, snap.Steps)
	a, b := snap.Steps[0], snap.Steps[1]
	if len(a.Errors) != 3 || len(b.Errors) != 3 {
		t.Fatalf("kept %d and %d messages, want the top 3 each", len(a.Errors), len(b.Errors))
	}
	// The 409 (400 times) and the drops (3 × 400) lead; the 503s, each
	// said once, are cut except one.
	if a.Errors[0].Class != "dropped" || a.Errors[0].Count != 1200 || a.Errors[1].Message != `409 Conflict: {"error":"taken"}` || a.Errors[1].Count != 400 {
		t.Fatalf("step a errors = %+v", a.Errors)
	}
	if a.OtherErrors["server_error"] != 399 {
		t.Fatalf("other = %v, want 399 server errors cut", a.OtherErrors)
	}
	if a.Statuses["200"] != 400 || a.Statuses["409"] != 400 || a.Statuses["503"] != 400 {
		t.Fatalf("statuses = %v", a.Statuses)
	}
	if b.Statuses["200"] != 400 {
		t.Fatalf("step b statuses = %v (a failed check still got a 200)", b.Statuses)
	}
}

// A table of a step holds a bounded number of messages however many
// distinct ones come: 10,000 different bodies at 50% of the failures,
// among the usual few, stay under 1 MiB per step, and the usual few keep
// their exact counts.
func TestMessageTableMemoryIsBounded(t *testing.T) {
	rec := New([]StepInfo{{Scenario: "s", Name: "a"}}, 1)
	// Histograms are made at a step's first record; they are not the
	// tables' memory.
	for _, sh := range rec.shards {
		sh.RecordResponse(0, sample.OK, 200, 1)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body := strings.Repeat("x", 180)
	n := 0
	for i := 0; i < 20000; i++ {
		sh := rec.Shard(int64(i / 2))
		if i%2 == 0 {
			sh.Fail(0, sample.ServerError, 500, 0, []byte(fmt.Sprintf("500 Internal Server Error: %s %d", body, i/2)))
			n++
		} else {
			sh.Fail(0, sample.ClientError, 409, 0, []byte(`409 Conflict: {"error":"voter has already voted"}`))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	held := 0
	for _, sh := range rec.shards {
		if tb := sh.msgs[0]; tb != nil {
			if len(tb.m) > rec.tableCap {
				t.Fatalf("a shard's table holds %d messages, cap %d", len(tb.m), rec.tableCap)
			}
			held += tb.size()
		}
	}
	const bound = 1 << 20
	// However many CPUs (shards), the tables' capacity stays in budget.
	for _, shards := range []int{1, 2, 16, 64, 256} {
		if worst := shards * tableCap(result.DefaultErrorsTop, shards) * maxEntryBytes; worst > bound && tableCap(result.DefaultErrorsTop, shards) > 4 {
			t.Errorf("%d shards: the tables could hold %d bytes per step", shards, worst)
		}
	}
	if held > bound || grown > bound {
		t.Fatalf("tables hold %d bytes (heap grew %d) for %d distinct bodies; bound %d", held, grown, n, bound)
	}
	st := rec.Snapshot().Steps[0]
	checkAll(t, []result.Step{st})
	if st.Errors[0].Count != 10000 || st.Errors[0].Status != 409 {
		t.Fatalf("the frequent message lost count: %+v", st.Errors[0])
	}
	if len(st.Errors) != result.DefaultErrorsTop {
		t.Fatalf("kept %d, want %d", len(st.Errors), result.DefaultErrorsTop)
	}
	runtime.KeepAlive(rec)
	t.Logf("%d distinct bodies: tables hold %d bytes over %d shards, heap grew %d", n, held, len(rec.shards), grown)
}

// A message that keeps coming after the table filled with one-offs gets a
// place and holds it: the least counted entries leave, not it.
func TestLateFrequentMessageIsKept(t *testing.T) {
	rec := New([]StepInfo{{Scenario: "s", Name: "a"}}, 1)
	rec.Configure(ErrorOptions{Top: 2})
	sh := rec.Shard(0)
	for i := 0; i < 100; i++ {
		sh.FailText(0, sample.Other, 0, 0, fmt.Sprintf("one-off %d", i))
	}
	for i := 0; i < 50; i++ {
		sh.FailText(0, sample.Timeout, 0, 0, "timeout after 30s")
		sh.FailText(0, sample.Other, 0, 0, fmt.Sprintf("another one-off %d", i))
	}
	st := rec.Snapshot().Steps[0]
	checkAll(t, []result.Step{st})
	if st.Errors[0].Message != "timeout after 30s" || st.Errors[0].Count != 50 {
		t.Fatalf("errors = %+v", st.Errors)
	}
	if st.OtherErrors["other"] != 149 {
		t.Fatalf("other = %v", st.OtherErrors)
	}
}

func TestMessagesAreRedactedAndOneLine(t *testing.T) {
	rec := New([]StepInfo{{Scenario: "s", Name: "a"}}, 1)
	rec.Configure(ErrorOptions{Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2", "${DB_PASSWORD}") }})
	sh := rec.Shard(0)
	sh.FailText(0, sample.Other, 0, 0, "Get \"https://bob:pw@example.test/x\":\n\tdial failed; password hunter2")
	got := rec.Snapshot().Steps[0].Errors[0].Message
	if got != `Get "https://[redacted]@example.test/x": dial failed; password ${DB_PASSWORD}` {
		t.Fatalf("message = %q", got)
	}
}

// A reset on a thousand connections is one message: the local address,
// new for each connection, is left out.
func TestErrorTextDropsTheLocalAddress(t *testing.T) {
	src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 54321}
	dst := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	err := &net.OpError{Op: "read", Net: "tcp", Source: src, Addr: dst, Err: errors.New("connection reset by peer")}
	if got := ErrorText(err); got != "read tcp 127.0.0.1:8080: connection reset by peer" {
		t.Fatalf("ErrorText = %q", got)
	}
}

func TestAppendBody(t *testing.T) {
	long := strings.Repeat("é", 300)
	got := string(AppendBody(nil, []byte(long), []byte("text/plain")))
	if len(got) > BodySnippet+len("…") || !strings.HasSuffix(got, "…") {
		t.Fatalf("long body: %d bytes %q", len(got), got[len(got)-10:])
	}
	if got := string(AppendBody(nil, []byte("a\x00b\xffc\r\n\r\nd"), nil)); got != "a b\uFFFDc d" {
		t.Fatalf("binary body: %q", got)
	}
}

// Snapshots stay right while failures keep coming (a checkpoint).
func TestSnapshotOfMessagesIsACopy(t *testing.T) {
	rec := New([]StepInfo{{Scenario: "s", Name: "a"}}, 1)
	sh := rec.Shard(0)
	sh.FailText(0, sample.Other, 0, 0, "x")
	s1 := rec.Snapshot()
	sh.FailText(0, sample.Other, 0, 0, "x")
	if s1.Steps[0].Errors[0].Count != 1 || rec.Snapshot().Steps[0].Errors[0].Count != 2 {
		t.Fatal("a snapshot shares counts with the live table")
	}
}

// size is the bytes the table holds, counted as maxEntryBytes does: its
// entries' keys, texts and a fixed overhead per entry.
func (t *msgTable) size() int {
	n := 0
	for k, e := range t.m {
		n += len(k) + 160
		if len(k) < 3 || e.msg != k[3:] {
			n += len(e.msg)
		}
	}
	return n
}
