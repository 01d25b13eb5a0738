//go:build !linux

package httpc

// writeOnce is unused where rawWrite is false: writes go through net.
func (o *outBuf) writeOnce(fd uintptr) bool { return true }

const rawWrite = false
