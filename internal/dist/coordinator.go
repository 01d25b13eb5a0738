package dist

import (
	"io"
	"os"
)

// CoordinatorEnv marks a worker started by Local: its stdin is a pipe from
// the coordinator that is never written to, so reading it ends (EOF) only
// when the coordinator's end closes, which the system does when the
// coordinator dies, however it dies and on every platform.
const CoordinatorEnv = "STAMPEDE_COORDINATOR_STDIN"

// FollowCoordinator makes a worker end when its coordinator does, when
// CoordinatorEnv says it is one: a load whose coordinator is gone has no
// one to merge or judge it, and must not go on against the target. exit
// is called once stdin ends (os.Exit in the binary). The variable is
// removed, so nothing this process starts takes it for its own.
func FollowCoordinator(exit func()) {
	if os.Getenv(CoordinatorEnv) != "1" {
		return
	}
	os.Unsetenv(CoordinatorEnv)
	go func() {
		// Any end of stdin, an error included, means the coordinator is gone.
		_, _ = io.Copy(io.Discard, os.Stdin)
		exit()
	}()
}
