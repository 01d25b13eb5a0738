package testserver

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// Limited serves at most Rate requests/s (a burst of a tenth of a second)
// and answers Reject above it: a target whose capacity is known, for
// capacity searches and saturation tests.
type Limited struct {
	Rate   float64
	Reject int // status above the rate, such as 429 or 503

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func (b *Limited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	now := time.Now()
	burst := b.Rate / 10
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = math.Min(burst, b.tokens+now.Sub(b.last).Seconds()*b.Rate)
	}
	b.last = now
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	b.mu.Unlock()
	if !ok {
		w.WriteHeader(b.Reject)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
