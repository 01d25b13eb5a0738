package metrics

import (
	"runtime"
	"testing"
)

// A snapshot allocates at most 16 KiB per sent step, its two encoded
// latencies included: each checkpoint of a plan with 1,000 sent steps
// allocated 1.66 GB while hdrhistogram-go's Encode made a zlib writer for
// every latency (~825 KB each).
func TestSnapshotCostPerSentStep(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const limit = 16 << 10
	_, snap := sentCost(1001, 2)
	t.Logf("a snapshot allocates %.0f B per sent step", snap)
	if snap > limit {
		t.Errorf("a snapshot allocates %.0f B per sent step, want at most %d", snap, limit)
	}
}
