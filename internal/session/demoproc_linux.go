package session

import "syscall"

// demoChildAttrs puts the demo child in its own process group (a Ctrl-C
// reaches us, and we stop it in order) and has the kernel kill it if we
// die, so it never outlives us even after a SIGKILL.
func demoChildAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
