package dist

import (
	"os/exec"
	"runtime"
)

// RunWorker starts cmd as a worker of this process, the way Local starts
// its segments, and waits for it: in a process group of its own (a
// terminal's Ctrl-C reaches only this process, which passes it on once),
// killed by the kernel when this process dies (Linux), and with a stdin
// pipe from this process and CoordinatorEnv set, so it also stops when
// this process dies where there is no such signal (CoordinatorEnv, followed by the binary's main).
// For runners that start their own processes, such as each level of a
// sweep split over --workers. cmd.Stdin and cmd.SysProcAttr must be unset.
func RunWorker(cmd *exec.Cmd) error {
	cmd.SysProcAttr = workerAttrs()
	cmd.Env = append(cmd.Environ(), CoordinatorEnv+"=1")
	waited := make(chan error, 1)
	go func() {
		// The parent-death signal is tied to the starting thread (see
		// Local.startAll): it is kept until the worker has ended.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := startWorker(cmd); err != nil {
			waited <- err
			return
		}
		waited <- cmd.Wait()
	}()
	return <-waited
}
