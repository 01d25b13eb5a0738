//go:build race

package vu

// raceEnabled: the race detector makes sync.Pool drop items at random (to
// find misuse), so pooled buffers (the regexp's machines, for one) are
// sometimes made anew and allocation counts stop meaning anything.
const raceEnabled = true
