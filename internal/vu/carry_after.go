package vu

// A level of gates or a sweep run as segment processes (--workers, or the
// pods of `stampede k8s gates|sweep`) is a new process per level: its
// Carry starts empty, so its {{ vu }} ids would restart at 1 and, with a
// plan's seed, its users would draw the {{ uuid }}s an earlier level's
// drew. The coordinator hands each level the highest ids the levels
// before it reached (StartAfter), and reads them back from each segment
// (Reached), as one process's Carry carries them from level to level.

// StartAfter makes the next run's users number after vu and their
// iteration counters start after iter, as if runs that reached them had
// been given this carry before. Call it before the first run adopts it.
func (c *Carry) StartAfter(vu, iter int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		n := c.next.Load()
		if vu <= n || c.next.CompareAndSwap(n, vu) {
			break
		}
	}
	c.iterBase = max(c.iterBase, iter)
}

// Reached is the highest {{ vu }} handed out so far and the highest
// iteration counter value reached, counted as Adopt counts them for the
// next run. The runs given the carry must have ended.
func (c *Carry) Reached() (vu, iter int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	iter = c.iterBase
	for _, n := range c.counters {
		iter = max(iter, *n)
	}
	return c.next.Load(), iter
}
