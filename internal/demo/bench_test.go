package demo

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The demo shares a small machine with the load generator, so its own
// per-request cost is tracked here.

func BenchmarkParties(b *testing.B) {
	s := New(Options{DBPool: 1 << 10, DBServiceTime: time.Nanosecond})
	h := s.Handler()
	req := httptest.NewRequest("GET", "/elections/e1/parties", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := httptest.NewRecorder()
		for pb.Next() {
			w.Body.Reset()
			h.ServeHTTP(w, req)
		}
	})
}

func BenchmarkVote(b *testing.B) {
	s := New(Options{DBPool: 1 << 10, DBServiceTime: time.Nanosecond})
	h := s.Handler()
	var seq atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := httptest.NewRecorder()
		for pb.Next() {
			req := httptest.NewRequest("POST", "/votes", strings.NewReader(`{"partyId":"p1"}`))
			req.Header = http.Header{
				"Voter-Id":             {fmt.Sprint(seq.Add(1))},
				"Election-District-Id": {"d1"},
			}
			w.Body.Reset()
			h.ServeHTTP(w, req)
		}
	})
}
