package junitfile

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// --junit to a pipe gets the report in place, and stays a pipe; with
// nothing measured it is left alone. Before, the report was renamed over
// it (as root, --junit /dev/null replaced the device), a run with nothing
// measured removed it, and New's create waited for a reader before the
// load.
func TestJUnitIntoAPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	s, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	// A reader is there first, as a shell's is. Opened non-blocking, a
	// read before any writer came says end of file, which is not yet the
	// end: read until the writer's close after something came.
	rd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		defer rd.Close()
		var b []byte
		buf := make([]byte, 1<<16)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
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
	if err := s.Close(sweepResult()); err != nil {
		t.Fatal(err)
	}
	var b []byte
	select {
	case b = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the reader saw no end")
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a pipe (%v)", path, err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil || len(b) == 0 {
		t.Errorf("the pipe got no whole report (%d bytes): %v", len(b), err)
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("a run with nothing measured removed the pipe: %v", err)
	}
}
