//go:build linux

package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/testserver"
)

func isPipe(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()&os.ModeNamedPipe != 0
}

// -o to a pipe (mkfifo, bash's >(jq .)) or a device (/dev/null): the
// result is written into it, once, and it is still a pipe afterwards.
// Before, the final rename replaced it with a regular file (as root, -o
// /dev/null deleted the device), and a pipe's reader got nothing.
func TestResultIntoAPipeIsWrittenNotReplaced(t *testing.T) {
	path, read := testserver.Pipe(t, "out.json")
	o, err := Open(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Checkpoint(small(t, 3, true)); err != nil {
		t.Fatal(err)
	}
	if err := o.Final(small(t, 5, false)); err != nil {
		t.Fatal(err)
	}
	if err := o.Final(small(t, 4, true)); err != nil {
		t.Fatal(err)
	}
	o.Close()
	got := read()
	if !isPipe(t, path) {
		t.Fatalf("%s is no longer a pipe", path)
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	var docs []Result
	for {
		var r Result
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the pipe got no whole result: %v\n%.300s", err, got)
		}
		docs = append(docs, r)
	}
	if len(docs) != 1 || docs[0].Totals.Requests != 5 || docs[0].Run.Partial {
		t.Fatalf("the pipe got %d results (want the final one, 5 requests, once): %.300s", len(docs), got)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) > 0 {
		t.Errorf("spare files beside a pipe: %v", left)
	}
}

// merge -o PIPE goes through Write.
func TestWriteIntoAPipe(t *testing.T) {
	path, read := testserver.Pipe(t, "out.json")
	if err := Write(path, small(t, 2, false)); err != nil {
		t.Fatal(err)
	}
	got := read()
	if !isPipe(t, path) {
		t.Fatalf("%s is no longer a pipe", path)
	}
	if _, err := Decode(got); err != nil {
		t.Fatalf("the pipe got no whole result: %v", err)
	}
}

// A pipe nobody reads fails at Open, before any load, instead of hanging
// the run's end.
func TestResultIntoAPipeNobodyReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		o, err := Open(path, 1<<20)
		if err == nil {
			o.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no process reads the pipe") {
			t.Fatalf("Open: %v, want no process reads the pipe", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open waited for a reader")
	}
}

// -o DIR: before, the load ran and its end found the rename failing,
// everything measured lost.
func TestResultIntoADirectoryIsRefusedAtOpen(t *testing.T) {
	dir := t.TempDir()
	if err := CheckDestination(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("CheckDestination(dir): %v, want is a directory", err)
	}
	if o, err := Open(dir, 1<<20); err == nil {
		o.Close()
		t.Error("Open(dir) succeeded")
	}
	if err := Write(dir, small(t, 1, false)); err == nil {
		t.Error("Write(dir) succeeded")
	}
	if !IsStream(os.DevNull) {
		t.Errorf("%s is not taken for a device", os.DevNull)
	}
}

// -o /dev/stdout with stdout sent to a file (`> out.json`): the path is a
// link to this process's descriptor, and the file behind it gets the
// result, written through it. Before, the result was to be renamed over
// the link: refused ("cannot write the result next to"), or as root,
// /dev/stdout itself replaced.
func TestResultThroughADescriptorLinkToAFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("summary\n"); err != nil {
		t.Fatal(err)
	}
	link := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if _, err := os.Stat(link); err != nil {
		t.Skip(err)
	}
	o, err := Open(link, 1<<20)
	if err != nil {
		t.Fatalf("Open(%s): %v", link, err)
	}
	if err := o.Final(small(t, 2, false)); err != nil {
		t.Fatal(err)
	}
	o.Close()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	doc, ok := strings.CutPrefix(string(b), "summary\n")
	if !ok {
		t.Fatalf("what was written before the result is gone: %.100q", b)
	}
	if _, err := Decode([]byte(doc)); err != nil {
		t.Errorf("the file behind the link holds no whole result: %v", err)
	}
}

// Only links to a descriptor are written through; a result file under
// /dev/shm is a file like any other (written through, an old one there
// would have been appended to).
func TestSystemPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/dev/stdout": true, "/dev/stderr": true, "/dev/fd/3": true, "/proc/self/fd/1": true,
		"/dev/shm/result.json": false, "/tmp/result.json": false,
	} {
		if got := systemPath(path); got != want {
			t.Errorf("systemPath(%q) = %v, want %v", path, got, want)
		}
	}
}
