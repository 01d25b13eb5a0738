//go:build !linux

package readiness

import "syscall"

// Supported says whether Register can work here.
func Supported() bool { return false }

// Reg is one socket watched for readiness; none exist on this system.
type Reg struct{}

// Register always fails here: callers keep a reading goroutine.
func Register(syscall.Conn, Handler, bool) (*Reg, error) { return nil, ErrUnsupported }

func (r *Reg) Rearm() error               { return ErrUnsupported }
func (r *Reg) Unregister()                {}
func (r *Reg) Read(p []byte) (int, error) { return 0, ErrUnsupported }
