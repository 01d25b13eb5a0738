//go:build !unix

package dist

import "syscall"

// workerAttrs: without Unix process groups the workers share the parent's
// console and see its Ctrl-C themselves; each then stops and writes its
// partial result as it would on the parent's signal.
func workerAttrs() *syscall.SysProcAttr { return nil }
