package vu

import "testing"

// A carry started after given ids numbers its first run's users and
// counters after them, and reports what its runs reached.
func TestCarryStartAfter(t *testing.T) {
	var c Carry
	c.StartAfter(40, 7)
	if vu, iter := c.Reached(); vu != 40 || iter != 7 {
		t.Fatalf("reached %d, %d before any run; want 40, 7", vu, iter)
	}
	c.Adopt(&Program{})
	var n int64
	c.Counter(&n)
	if n != 7 {
		t.Errorf("first counter starts at %d, want 7", n)
	}
	n += 5 // five iterations
	if c.base != 40 {
		t.Errorf("users numbered after %d, want 40", c.base)
	}
	if _, iter := c.Reached(); iter != 12 {
		t.Errorf("reached iteration %d, want 12", iter)
	}
}
