//go:build !unix

package session

import "math"

// openFilesLimit: Windows has no RLIMIT_NOFILE; sockets are bounded by
// memory and ports, which the run reports as failures if it meets them.
func openFilesLimit() uint64 { return math.MaxUint64 }
