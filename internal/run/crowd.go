package run

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/vu"
)

// crowd is a run's HTTP users: every one made (to interrupt and close at
// the end), the ones still running (wg), and the last local id handed out.
type crowd struct {
	usersMu sync.Mutex
	users   []*vu.User
	wg      sync.WaitGroup
	nextID  atomic.Int64
}

// join adds a user made for the run.
func (c *crowd) join(u *vu.User) {
	c.usersMu.Lock()
	c.users = append(c.users, u)
	c.usersMu.Unlock()
}

// finish lets the users' work in flight end within grace, then cuts off
// (interrupts) what is still running, waits for it, and closes every
// user's connections.
func (c *crowd) finish(grace time.Duration) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	select {
	case <-done:
	case <-t.C:
		c.usersMu.Lock()
		for _, u := range c.users {
			u.Interrupt()
		}
		c.usersMu.Unlock()
		<-done
	}
	t.Stop()
	for _, u := range c.users {
		u.Close()
	}
}
