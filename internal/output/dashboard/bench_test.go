//go:build unix

package dashboard

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/profile"
	"github.com/stampede-load/stampede/internal/result"
)

// runSoFar is a run at 20,000 req/s after secs seconds as a snapshot
// holds it: one step, one series point a second, latencies spread over
// 0.1–10 ms. What a dashboard update costs depends on the series' length
// and the steps, not on the rate, which only the counts carry.
func runSoFar(secs int) *result.Result {
	r := snap(0)
	h := result.NewHistogram()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200_000; i++ {
		h.RecordValue(100 + rng.Int64N(10_000))
	}
	lat := result.LatencyOf(h)
	n := int64(secs) * 20_000
	r.Totals.Requests, r.Totals.Successful, r.Totals.LatencyOK, r.Totals.LatencyAll = n, n, lat, lat
	r.Steps[0].Requests, r.Steps[0].Successful, r.Steps[0].LatencyOK, r.Steps[0].LatencyAll = n, n, lat, lat
	r.Run.DurationS, r.Run.Model, r.Run.Partial = float64(secs), "open", true
	sr := result.Series{IntervalS: 1, Failed: map[string][]int64{}}
	for i := 0; i < secs; i++ {
		sr.T = append(sr.T, float64(i))
		for _, col := range []*[]int64{&sr.Started, &sr.Completed, &sr.OK, &sr.Active, &sr.InFlight, &sr.Dropped} {
			*col = append(*col, 20_000+rng.Int64N(50))
		}
		sr.P50US = append(sr.P50US, 500+rng.Int64N(100))
		sr.P95US = append(sr.P95US, 2000+rng.Int64N(500))
		sr.P99US = append(sr.P99US, 5000+rng.Int64N(900))
		sr.LagP99US = append(sr.LagP99US, 100+rng.Int64N(50))
		sr.Target = append(sr.Target, 20_000)
	}
	r.Series = sr
	return r
}

// BenchmarkDashboardUpdate is one second's dashboard work for a page open
// on a run at 20,000 req/s: the pump hands over the snapshot, the page
// hears the update and fetches the report (rendered) and the live strip.
// One op is one second of the run; ns/op over the generator's CPU per
// second at that rate is the dashboard's share (docs/benchmarks.md).
func BenchmarkDashboardUpdate(b *testing.B) {
	for _, secs := range []int{60, 600, 3600} {
		b.Run(fmt.Sprintf("run=%ds", secs), func(b *testing.B) {
			s, err := New("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(nil)
			s.SetProfile(StagesProfile(profile.Open, []profile.Stage{{Duration: time.Duration(secs) * time.Second, From: 20_000, To: 20_000}}))
			r := runSoFar(secs)
			c := &http.Client{}
			get := func(path string) int {
				resp, err := c.Get(s.URL() + path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return int(n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			// CPU, not wall time: on a shared machine the wall clock counts
			// the waits for a core, which cost the generator nothing.
			cpu0 := cpuTime()
			bytes := 0
			for i := 0; i < b.N; i++ {
				s.Sample(r)
				bytes += get("/report") + get("/live")
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/update")
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/update")
		})
	}
}

// cpuTime is this process's user and system CPU so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
