//go:build race

package httpc

// raceEnabled: the race detector makes sync.Pool drop items at random (to
// find misuse), so the pooled encoders are sometimes made anew and
// allocation counts stop meaning anything.
const raceEnabled = true
