package dist

import "syscall"

// workerAttrs puts each worker in a process group of its own, so a
// terminal's Ctrl-C reaches only the parent, which then stops the workers
// in order and merges what they measured; and has the kernel kill a worker
// whose parent dies (kill -9, an OOM kill, a CI job's timeout), so no load
// outlives the coordinator. The signal is tied to the thread that started
// the worker, which is why Run starts them from a goroutine locked to its
// thread until they have all ended.
func workerAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
