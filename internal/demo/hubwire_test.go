package demo

import (
	"bytes"
	"sync/atomic"
	"testing"
)

// TestMarkCounterSplits: a stream of marks and other bytes, written in
// every split into two and three pieces and byte by byte, counts each
// mark exactly once.
func TestMarkCounterSplits(t *testing.T) {
	stream := []byte(`{"type":1,"target":"OrderPlaced","arguments":[]}` + "\x1e" +
		"OrderPlacedOrderPlaced\xabOrderPlaced" + `{"type":6}` + "OrderPlace" + "dOrder")
	const want = 5
	if n := bytes.Count(stream, pushMark); n != want {
		t.Fatalf("stream holds %d marks", n)
	}
	count := func(pieces ...[]byte) uint64 {
		var n atomic.Uint64
		m := &markCounter{n: &n}
		for _, p := range pieces {
			m.wrote(p)
		}
		return n.Load()
	}
	for i := 0; i <= len(stream); i++ {
		if got := count(stream[:i], stream[i:]); got != want {
			t.Fatalf("split at %d: %d marks", i, got)
		}
		for j := i; j <= len(stream); j++ {
			if got := count(stream[:i], stream[i:j], stream[j:]); got != want {
				t.Fatalf("split at %d and %d: %d marks", i, j, got)
			}
		}
	}
	var bytewise [][]byte
	for i := range stream {
		bytewise = append(bytewise, stream[i:i+1])
	}
	if got := count(bytewise...); got != want {
		t.Fatalf("byte by byte: %d marks", got)
	}
}
