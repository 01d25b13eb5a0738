package run

import (
	"math"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
)

// A slot that failed to connect, or lost its connection, waits before it
// tries again, as a well-behaved client does: the wait's bound doubles
// with each failure in a row up to the plan's max, the wait is drawn from
// zero to the bound (full jitter) so a fleet refused together does not
// come back together, a server's Retry-After is a floor under it (and
// widens the jitter to at least itself, so a fleet refused at once with
// one Retry-After comes back over a second such period, not at its
// end), and after the plan's number of failures in a row the slot gives
// up.
//
// The draws are a hash of the run's seed, the slot and its attempt
// number, not a shared generator: reproducible per slot whatever order
// the goroutines hand slots back in, and free of locks and of memory per
// connection.

// backoffBound is the bound of the wait after fails failures in a row
// (0 after a held connection was lost): initial·2^max(fails-1, 0), at
// most max.
func backoffBound(r plan.Retry, fails int) time.Duration {
	b := r.Initial
	for i := 1; i < fails && b < r.Max; i++ {
		b *= 2
	}
	return min(b, r.Max)
}

// backoffWait is the wait after fails failures in a row; u in [0, 1) is
// the slot's draw for this wait.
func backoffWait(r plan.Retry, fails int, u float64) time.Duration {
	return jittered(r, backoffBound(r, fails), u)
}

// jittered is a wait of bound b: drawn from [0, b) with u, or b itself
// without jitter.
func jittered(r plan.Retry, b time.Duration, u float64) time.Duration {
	if !r.Jitter {
		return b
	}
	return time.Duration(u * float64(b))
}

// unitDraw is a number in [0, 1) fixed by the seed, the slot and the
// draw's number (splitmix64's finaliser).
func unitDraw(seed uint64, idx int, n int64) float64 {
	z := seed ^ uint64(idx)*0x9e3779b97f4a7c15 ^ uint64(n)*0xd1b54a32d192ed03
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// retryAfterFloor is the wait a failed attempt's server asked for.
func retryAfterFloor(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	return signalr.RetryAfter(err)
}

// waitToRetry sets s waiting after a failure (err: the failed attempt's,
// nil for a call or step that failed after connecting), or gives it up
// when the plan's attempts in a row are spent.
func (p *population) waitToRetry(s *slot, err error, now time.Time) {
	r := p.spec.Retry
	if s.fails < math.MaxUint16 {
		s.fails++
	}
	if r.Attempts > 0 && int(s.fails) >= r.Attempts {
		s.state, s.until = slotGaveUp, time.Time{}
		p.gaveUp.Add(1)
		return
	}
	s.state, s.until = slotWaiting, now.Add(p.retryWait(int(s.fails), err, unitDraw(p.seed, s.idx, s.iter)))
}

// retryWait is the wait after fails failures in a row, the last one err;
// u is the slot's draw. Without jitter it is the bound, or the server's
// Retry-After where that is longer.
func (p *population) retryWait(fails int, err error, u float64) time.Duration {
	r := p.spec.Retry
	bound := backoffBound(r, fails)
	ra, ok := retryAfterFloor(err)
	if !ok {
		return jittered(r, bound, u)
	}
	p.retryAfters.Add(1)
	if !r.Jitter {
		return max(ra, bound)
	}
	return ra + jittered(r, max(bound, ra), u)
}

// waitAfterLoss sets s waiting after its held connection was lost: the
// connection held, so the backoff starts afresh.
func (p *population) waitAfterLoss(s *slot, now time.Time) {
	s.fails = 0
	s.state, s.until = slotWaiting, now.Add(backoffWait(p.spec.Retry, 0, unitDraw(p.seed, s.idx, s.iter)))
}

// retrySeries counts, per second of the run, the connection attempts
// started and the most slots waiting to retry at once. The controller
// writes it; checkpoints read it.
type retrySeries struct {
	mu       sync.Mutex
	attempts []int64
	waiting  []int64
	peak     int64
}

func (rs *retrySeries) grow(sec int) {
	for len(rs.attempts) <= sec {
		rs.attempts = append(rs.attempts, 0)
		rs.waiting = append(rs.waiting, 0)
	}
}

// tick records a control turn at second sec: started attempts began and
// waiting slots were waiting.
func (rs *retrySeries) tick(sec int, started, waiting int64) {
	if sec < 0 {
		sec = 0
	}
	rs.mu.Lock()
	rs.grow(sec)
	rs.attempts[sec] += started
	rs.waiting[sec] = max(rs.waiting[sec], waiting)
	rs.peak = max(rs.peak, waiting)
	rs.mu.Unlock()
}

// snapshot copies the series and the peak.
func (rs *retrySeries) snapshot() (attempts, waiting []int64, peak int64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]int64(nil), rs.attempts...), append([]int64(nil), rs.waiting...), rs.peak
}
