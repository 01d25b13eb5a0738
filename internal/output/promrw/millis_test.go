package promrw

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/stampede-load/stampede/internal/output/points"
)

// strictReceiver refuses a batch, as Prometheus does, when a series gets
// a sample at or before the millisecond of its last one; it counts the
// batches refused.
type strictReceiver struct {
	mu      sync.Mutex
	last    map[string]int64
	refused int
	batches int
	// stamps is each batch's latest sample time.
	stamps []int64
}

func (rcv *strictReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	raw, _ := snappy.Decode(nil, body)
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	rcv.batches++
	next := map[string]int64{}
	for k, v := range rcv.last {
		next[k] = v
	}
	for _, ts := range wr.Timeseries {
		k := seriesKey(ts.Labels)
		for _, smp := range ts.Samples {
			if last, ok := next[k]; ok && smp.Timestamp <= last {
				rcv.refused++
				http.Error(w, "duplicate sample for timestamp", http.StatusBadRequest)
				return
			}
			next[k] = smp.Timestamp
		}
	}
	rcv.last = next
	var latest int64
	for _, ts := range wr.Timeseries {
		for _, smp := range ts.Samples {
			latest = max(latest, smp.Timestamp)
		}
	}
	rcv.stamps = append(rcv.stamps, latest)
}

// TestSameMillisecondIsNotADuplicate: a last tick, the final figures and
// the stale markers all in one millisecond (a short run ends just after a
// tick) must reach the receiver as three batches at rising milliseconds;
// before, the final sample and the markers were refused as duplicates and
// every series lingered for Prometheus's 5 minute lookback.
func TestSameMillisecondIsNotADuplicate(t *testing.T) {
	rcv := &strictReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	at := time.UnixMilli(time.Now().UnixMilli()).Add(300 * time.Microsecond)
	s := runSink(t, srv.URL, points.Run{TestID: "ms"}, &at)
	r := snapshot(t, 1)
	r.Run.Started = at.Add(-200 * time.Microsecond) // the start in the same millisecond too
	s.Sample(r)
	at = at.Add(100 * time.Microsecond)
	if err := s.Close(snapshot(t, 2)); err != nil {
		t.Fatalf("close: %v", err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.batches != 3 || rcv.refused != 0 {
		t.Fatalf("%d batches, %d refused; want 3 (tick, final, stale markers), none refused", rcv.batches, rcv.refused)
	}
}

// TestSameMillisecondIntoPrometheus: the same against a real Prometheus,
// whose answer to a duplicate is a 400 for the whole batch: the final
// figure is stored and every series ends at the run's end.
func TestSameMillisecondIntoPrometheus(t *testing.T) {
	base := startPrometheus(t)
	end := time.UnixMilli(time.Now().UnixMilli()).Add(300 * time.Microsecond)
	at := end
	s := runSink(t, base, points.Run{TestID: "samems"}, &at)
	r1, r2 := snapshot(t, 1), snapshot(t, 2)
	// The last interval ends after now: the tick is stamped now.
	r1.Run.Started, r2.Run.Started = end.Add(-time.Second), end.Add(-time.Second)
	s.Sample(r1)
	if err := s.Close(r2); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := query(t, base, `sum(stampede_requests_total{testid="samems"})`, "", end.Add(time.Millisecond)); got[""] != 606 {
		t.Errorf("requests at the run's end: %v, want the final 606", got)
	}
	for _, q := range []string{`stampede_active_users`, `stampede_requests_total`} {
		if got := query(t, base, q+`{testid="samems"}`, "step_index", end.Add(10*time.Second)); len(got) != 0 {
			t.Errorf("%s 10 s after the run: %v, want no series", q, got)
		}
	}
}

// TestSamplesStampedWithTheirInterval: with --workers a snapshot is the
// merge of checkpoints that trail the run; its samples carry the end of
// its last interval, not the push time, and a snapshot with no new
// interval (the same checkpoints a second later) is not sent again.
func TestSamplesStampedWithTheirInterval(t *testing.T) {
	rcv := &strictReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	start := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	at := start.Add(9 * time.Second)
	s := runSink(t, srv.URL, points.Run{TestID: "iv"}, &at)
	r := snapshot(t, 1)
	r.Run.Started = start
	r.Series.T = []float64{0, 1, 2, 3, 4}
	s.Sample(r)
	at = start.Add(10 * time.Second)
	s.Sample(r) // no new interval
	r2 := snapshot(t, 2)
	r2.Run.Started = start
	r2.Series.T = []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	at = start.Add(11 * time.Second)
	s.Sample(r2)
	at = start.Add(12 * time.Second)
	if err := s.Close(r2); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	want := []int64{start.Add(5 * time.Second).UnixMilli(), start.Add(10 * time.Second).UnixMilli(),
		start.Add(12 * time.Second).UnixMilli(), start.Add(12*time.Second).UnixMilli() + 1}
	if len(rcv.stamps) != len(want) {
		t.Fatalf("batches at %v, want %v (interval ends, the final figures now, the stale markers)", rcv.stamps, want)
	}
	for i := range want {
		if rcv.stamps[i] != want[i] {
			t.Errorf("batch %d at %+dms from the start, want %+dms", i, rcv.stamps[i]-start.UnixMilli(), want[i]-start.UnixMilli())
		}
	}
}
