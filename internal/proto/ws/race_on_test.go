//go:build race

package ws

// raceEnabled: the race detector changes what allocations cost.
const raceEnabled = true
