package junitfile

import (
	"encoding/xml"
	"os"
	"testing"

	"github.com/stampede-load/stampede/internal/testserver"
)

// --junit to a pipe gets the report in place, and stays a pipe; with
// nothing measured it is left alone. Before, the report was renamed over
// it (as root, --junit /dev/null replaced the device), a run with nothing
// measured removed it, and New's create waited for a reader before the
// load.
func TestJUnitIntoAPipe(t *testing.T) {
	path, read := testserver.Pipe(t, "junit.xml")
	s, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(sweepResult()); err != nil {
		t.Fatal(err)
	}
	b := read()
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
