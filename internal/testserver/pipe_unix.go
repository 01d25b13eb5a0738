//go:build unix

package testserver

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Pipe makes a named pipe called name in a directory of the test's own,
// with a reader already at it, as a shell's pipe reader is (-o >(jq .)),
// and returns its path and a function that waits for what was written,
// read until the writer closes. The test skips where no pipe can be made.
func Pipe(t testing.TB, name string) (path string, read func() []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	// Opened non-blocking, the reader is there at once; a read before any
	// writer came says end of file, which is not yet the end: reading
	// goes on until the writer's close after something came.
	rd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		defer rd.Close()
		var b []byte
		buf := make([]byte, 1<<16)
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
			n, err := rd.Read(buf)
			b = append(b, buf[:n]...)
			if err == io.EOF && len(b) > 0 || err != nil && err != io.EOF {
				break
			}
			if err == io.EOF {
				time.Sleep(time.Millisecond)
			}
		}
		got <- b
	}()
	return path, func() []byte {
		t.Helper()
		select {
		case b := <-got:
			return b
		case <-time.After(100 * time.Second):
			t.Fatal("the pipe's reader saw no end")
			return nil
		}
	}
}
