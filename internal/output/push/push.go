// Package push is the delivery half of a streaming output: a bounded queue
// of batches a worker sends in order, so a receiver that is slow or down
// costs the run a counted loss, never a wait.
package push

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Permanent marks a send error that retrying cannot fix (the receiver
// refused the batch itself, a 400 say): the batch is dropped at once.
type Permanent struct{ Err error }

func (p Permanent) Error() string { return p.Err.Error() }
func (p Permanent) Unwrap() error { return p.Err }

// Send delivers one batch; it must give up when ctx ends.
type Send func(ctx context.Context, batch any) error

// Queue holds up to Max batches for its worker.
type Queue struct {
	send     Send
	max      int
	timeout  time.Duration
	attempts int

	mu       sync.Mutex
	queue    []any
	inFlight bool
	closing  bool
	wake     chan struct{}
	done     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	stats    Stats
	lastErr  error
}

// Stats is what became of the batches offered.
type Stats struct {
	Offered, Sent int
	// Overflow: dropped, oldest first, because the queue was full (the
	// receiver could not keep up); Failed: given up on after errors.
	Overflow, Failed int
}

// New starts a queue's worker. timeout bounds one send; a batch that
// fails is tried up to 3 times, with a pause between tries.
func New(max int, timeout time.Duration, send Send) *Queue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue{send: send, max: max, timeout: timeout, attempts: 3,
		wake: make(chan struct{}, 1), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go q.run()
	return q
}

// Offer queues a batch and returns at once. A full queue drops its oldest
// batch: the newest says most about the run now, and a cumulative one
// carries what the dropped one held.
func (q *Queue) Offer(b any) {
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		return
	}
	q.stats.Offered++
	if len(q.queue) >= q.max {
		q.queue = q.queue[1:]
		q.stats.Overflow++
	}
	q.queue = append(q.queue, b)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			closing := q.closing
			q.mu.Unlock()
			if closing {
				return
			}
			select {
			case <-q.wake:
			case <-q.ctx.Done():
				return
			}
			continue
		}
		b := q.queue[0]
		q.queue = q.queue[1:]
		q.inFlight = true
		q.mu.Unlock()
		err := q.deliver(b)
		q.mu.Lock()
		q.inFlight = false
		if err != nil {
			q.stats.Failed++
			q.lastErr = err
		} else {
			q.stats.Sent++
		}
		q.mu.Unlock()
		if q.ctx.Err() != nil {
			return
		}
	}
}

func (q *Queue) deliver(b any) error {
	pause := 250 * time.Millisecond
	var err error
	for try := 0; try < q.attempts; try++ {
		if try > 0 {
			select {
			case <-time.After(pause):
			case <-q.ctx.Done():
				return err
			}
			pause *= 2
		}
		ctx, cancel := context.WithTimeout(q.ctx, q.timeout)
		err = q.send(ctx, b)
		cancel()
		var perm Permanent
		if err == nil || errors.As(err, &perm) || q.ctx.Err() != nil {
			return err
		}
	}
	return err
}

// Close sends what is queued, waiting no longer than flush, and says what
// was lost (nil when every batch was delivered).
func (q *Queue) Close(flush time.Duration) (Stats, error) {
	q.mu.Lock()
	q.closing = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(flush)
	select {
	case <-q.done:
		t.Stop()
	case <-t.C:
		q.cancel()
		<-q.done
	}
	q.cancel()
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.stats
	left := len(q.queue)
	if q.inFlight {
		left++
	}
	if st.Sent == st.Offered {
		return st, nil
	}
	msg := fmt.Sprintf("%d of %d batches not delivered", st.Offered-st.Sent, st.Offered)
	var parts []string
	if st.Overflow > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped while the receiver could not keep up", st.Overflow))
	}
	if st.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", st.Failed))
	}
	if left > 0 {
		parts = append(parts, fmt.Sprintf("%d still queued after %v", left, flush))
	}
	for i, p := range parts {
		if i == 0 {
			msg += " ("
		} else {
			msg += ", "
		}
		msg += p
	}
	if len(parts) > 0 {
		msg += ")"
	}
	if q.lastErr != nil {
		msg += "; last error: " + q.lastErr.Error()
	}
	return st, errors.New(msg)
}

// Redact is err with every secret in its text as xxxxx, Permanent if err
// was: a receiver that echoes the request back puts the token and the
// header values into its answer, which a warning shows. A header value
// "Scheme credentials" is redacted whole and by its credentials.
func Redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var olds []string
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		olds = append(olds, s)
		if _, cred, ok := strings.Cut(s, " "); ok && strings.TrimSpace(cred) != "" {
			olds = append(olds, strings.TrimSpace(cred))
		}
	}
	// Longest first, so a value is not left half shown by a shorter one
	// inside it.
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	for _, s := range olds {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	var perm Permanent
	if errors.As(err, &perm) {
		return Permanent{Err: errors.New(msg)}
	}
	return errors.New(msg)
}
