//go:build unix

package result

import "syscall"

// A pipe opened with O_NONBLOCK and no reader fails with ENXIO at once,
// where a plain open would wait for a reader forever.
const oNonblock = syscall.O_NONBLOCK

var errNoReader = syscall.ENXIO
