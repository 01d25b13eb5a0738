//go:build unix

package hostile

import "syscall"

// smallReceiveBuffer asks for the smallest receive buffer the kernel allows.
func smallReceiveBuffer(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
}
