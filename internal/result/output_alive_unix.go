//go:build unix

package result

import (
	"errors"
	"syscall"
)

// processAlive: signal 0 checks that pid exists without touching it; a
// process of another user is alive too (EPERM).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
