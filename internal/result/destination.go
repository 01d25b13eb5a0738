package result

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// isStream reports whether path names a character device or a pipe
// (-o /dev/null, -o /dev/stdout, a mkfifo, bash's -o >(jq .)): such a
// file cannot be replaced, only written, so it gets the final result
// once, in place. Renaming a file over it, as a regular result is
// written, would delete the device (as root, /dev/null itself) and leave
// the reader of a pipe with nothing. A directory, a socket or a block
// device is refused before any load rather than found out at the final
// write, with everything measured lost.
func isStream(path string) (bool, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	m := fi.Mode()
	switch {
	case m.IsRegular() && systemPath(path):
		// -o /dev/stdout with stdout sent to a file: the path is a link
		// to this process's descriptor, which a rename would replace
		// (as root, breaking /dev/stdout); the file behind it is
		// written through it instead.
		return true, nil
	case m.IsRegular():
		return false, nil
	case m.IsDir():
		return false, fmt.Errorf("%s is a directory: name a file in it, such as %s", path, filepath.Join(path, "result.json"))
	case m&fs.ModeNamedPipe != 0, m&fs.ModeCharDevice != 0:
		return true, nil
	}
	return false, fmt.Errorf("%s is not a regular file, a character device or a pipe (%s): name a file", path, m.Type())
}

// CheckDestination refuses, before any load, a result path that cannot
// take a result: a directory, a socket, a block device.
func CheckDestination(path string) error {
	_, err := isStream(path)
	return err
}

// IsStream reports whether path is a device or a pipe, written once with
// the final result (isStream); an unreadable path is not.
func IsStream(path string) bool {
	stream, err := isStream(path)
	return stream && err == nil
}

// systemPath reports whether path is a link to a process's descriptor
// (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/...), never a place to make
// or rename files in. A regular file elsewhere under /dev (/dev/shm) is
// a file like any other.
func systemPath(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	switch abs {
	case "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(abs, "/dev/fd/") || strings.HasPrefix(abs, "/proc/")
}

// openStream opens a device or pipe for the final result, appending (a
// file behind /dev/stdout keeps what was written before). A pipe nobody
// reads yet is an error now, not a run that hangs at its end.
func openStream(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|oNonblock, 0)
	if errors.Is(err, errNoReader) {
		return nil, fmt.Errorf("no process reads the pipe %s: start its reader first", path)
	}
	if err != nil {
		return nil, err
	}
	// Blocking again once open: Fd puts the descriptor in blocking mode,
	// so a slow reader is waited for where the runtime does not poll a
	// pipe (darwin), instead of the write failing with EAGAIN.
	_ = f.Fd()
	return f, nil
}

// WriteStream writes one document to a device or pipe (IsStream), whole,
// in place: what --junit and the like write there instead of renaming a
// file over it.
func WriteStream(path string, data []byte) error { return writeStream(path, data) }

// writeStream writes one document to a device or pipe, whole.
func writeStream(path string, data []byte) error {
	f, err := openStream(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
