//go:build !unix

package result

// processAlive: without a cheap check, every process counts as alive, so
// no spare file is ever taken from a run that still uses it.
func processAlive(int) bool { return true }
