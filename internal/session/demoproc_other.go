//go:build !linux

package session

import "syscall"

// demoChildAttrs: outside Linux there is no parent-death signal, so the demo
// child is stopped by our own stop function; if we are killed outright it
// lingers until its listener is closed by hand.
func demoChildAttrs() *syscall.SysProcAttr { return nil }
