package httpc

import (
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

// tlsStats counts a run's TLS handshakes and their durations. A handshake
// happens once per connection, thousands of times rarer than a request,
// so a lock costs nothing that shows.
type tlsStats struct {
	mu                     sync.Mutex
	full, resumed, failure int64
	took                   *hdr.Histogram // made at the first handshake
}

func (s *tlsStats) done(resumed bool, took time.Duration) {
	us := max(took.Microseconds(), result.HistLowUS)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.took == nil {
		s.took = result.NewHistogram()
	}
	if resumed {
		s.resumed++
	} else {
		s.full++
	}
	// In range: a handshake's time is not negative, and clamped above.
	_ = s.took.RecordValue(min(us, result.HistHighUS))
}

func (s *tlsStats) failed() {
	s.mu.Lock()
	s.failure++
	s.mu.Unlock()
}

// TLS returns the run's handshakes so far, or nil when there was none.
func (s *Shared) TLS() *result.TLS {
	st := &s.tlsStats
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.took == nil && st.failure == 0 {
		return nil
	}
	h := st.took
	if h == nil {
		h = result.NewHistogram()
	}
	return &result.TLS{
		Handshakes: st.full + st.resumed,
		Full:       st.full,
		Resumed:    st.resumed,
		Failed:     st.failure,
		Duration:   result.LatencyOf(h),
	}
}
