package push

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOrderRetryAndPermanent: batches go out in the order offered; a
// passing error is retried, a permanent one is not; Close reports the
// loss.
func TestOrderRetryAndPermanent(t *testing.T) {
	var mu sync.Mutex
	var calls []int
	fails := map[int]int{2: 2} // batch 2 fails twice, then passes
	send := func(ctx context.Context, b any) error {
		n := b.(int)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, n)
		if fails[n] > 0 {
			fails[n]--
			return errors.New("503 busy")
		}
		if n == 4 {
			return Permanent{errors.New("400 bad batch")}
		}
		return nil
	}
	q := New(10, time.Second, send)
	for i := 1; i <= 5; i++ {
		q.Offer(i)
	}
	st, err := q.Close(30 * time.Second)
	want := []int{1, 2, 2, 2, 3, 4, 5}
	if len(calls) != len(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", calls, want)
		}
	}
	if st.Sent != 4 || st.Failed != 1 || st.Offered != 5 || err == nil || !strings.Contains(err.Error(), "1 of 5 batches not delivered (1 failed); last error: 400 bad batch") {
		t.Errorf("stats %+v, err %v", st, err)
	}
}

// TestOfferNeverWaits: with the worker stuck in a send, offers keep
// returning; the oldest queued batches are dropped and counted; Close
// gives up after its flush time and cancels the send.
func TestOfferNeverWaits(t *testing.T) {
	started := make(chan struct{}, 1)
	send := func(ctx context.Context, b any) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	q := New(3, time.Hour, send)
	q.Offer(0)
	<-started // batch 0 is in flight
	for i := 1; i <= 10; i++ {
		q.Offer(i)
	}
	st, err := q.Close(50 * time.Millisecond)
	if st.Offered != 11 || st.Overflow != 7 || st.Sent != 0 {
		t.Errorf("stats %+v", st)
	}
	if err == nil || !strings.Contains(err.Error(), "7 dropped while the receiver could not keep up") {
		t.Errorf("close: %v", err)
	}
	// Offers after Close are ignored rather than queued for no worker.
	q.Offer(99)
}

func TestAllDelivered(t *testing.T) {
	q := New(2, time.Second, func(context.Context, any) error { return nil })
	for i := 0; i < 2; i++ {
		q.Offer(i)
	}
	if st, err := q.Close(10 * time.Second); err != nil || st.Sent != 2 {
		t.Errorf("%+v %v", st, err)
	}
}
