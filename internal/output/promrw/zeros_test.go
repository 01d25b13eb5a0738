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

// TestZeroResentAfterALostFirstBatch: the receiver is unavailable (503)
// for the whole first batch, then takes what follows. The counters' 0
// samples, which went with the lost batch, must arrive with the next:
// before, they were lost with it and increase() left out the counts of
// the run's first seconds.
func TestZeroResentAfterALostFirstBatch(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	stored := map[string][]prompb.Sample{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		raw, _ := snappy.Decode(nil, body)
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 3 { // every try of the first batch
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		for _, ts := range wr.Timeseries {
			for _, l := range ts.Labels {
				if l.Name == "__name__" && l.Value == "stampede_requests_total" {
					k := seriesKey(ts.Labels)
					stored[k] = append(stored[k], ts.Samples...)
				}
			}
		}
	}))
	defer srv.Close()
	start := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	at := start.Add(2 * time.Second)
	s := runSink(t, srv.URL, points.Run{TestID: "zero"}, &at)
	r := snapshot(t, 1)
	r.Run.Started = start
	r.Series.T = []float64{0, 1}
	s.Sample(r)
	// The queue sends in order: batch 1's three tries are the 503s,
	// whenever the next batch is made.
	at = start.Add(5 * time.Second)
	if err := s.Close(snapshot(t, 2)); err == nil {
		t.Error("close: nil, want the first batch counted as lost")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stored) != 2 {
		t.Fatalf("requests series stored: %d, want 2", len(stored))
	}
	for k, ss := range stored {
		if len(ss) == 0 || ss[0].Value != 0 || ss[0].Timestamp != start.UnixMilli() {
			t.Errorf("series %q: samples %v, want a first 0 at the run's start", k, ss)
		}
	}
}
