package result

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	errNoPreallocate = errors.New("the file system cannot preallocate")
	errNoExchange    = errors.New("the file system cannot exchange names")
)

// freeBytes is the space an unprivileged process may still use in dir.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// preallocate makes the file system give f n bytes of blocks now, so
// writes within them cannot fail for want of space later.
func preallocate(f *os.File, n int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return errNoPreallocate
	}
	return err
}

// exchange swaps the names a and b atomically.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
		return errNoExchange
	}
	return err
}
