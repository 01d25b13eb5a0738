//go:build unix && !linux

package dist

import "syscall"

// workerAttrs puts each worker in a process group of its own, so a terminal's
// Ctrl-C reaches only the parent, which then stops the workers in order and
// merges what they measured. There is no parent-death signal here: a worker
// stops when its stdin, a pipe from the parent, reaches its end
// (CoordinatorEnv, followed by the binary's main).
func workerAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
