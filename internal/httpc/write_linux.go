//go:build linux

package httpc

import (
	"syscall"
	"unsafe"
)

// writeOnce writes o.left to the socket without telling Go's scheduler it
// is in a system call. The socket does not block (EAGAIN sends the caller
// to the poller, as net's own write does), but on loopback a send runs the
// receiver's TCP path too and often outlasts the scheduler monitor's tick:
// announced, such a write had its P handed to another thread and taken
// back (futex wake-ups, and a monitor kept polling every 20 µs), most of
// the open model's system time per request. MSG_NOSIGNAL keeps a closed
// peer from raising SIGPIPE.
func (o *outBuf) writeOnce(fd uintptr) bool {
	for len(o.left) > 0 {
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&o.left[0])), uintptr(len(o.left)), syscall.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			o.left = o.left[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

const rawWrite = true
