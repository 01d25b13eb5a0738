//go:build !linux

package httpc

// LoopTLS exists on every system so the event loop's transport type
// compiles everywhere; only Linux has the event loop that fills it.
type LoopTLS struct{}
