package e2e

import (
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/testserver"
)

// -o naming a directory is refused before any load. Before, the whole
// load ran and its end found the result could not be renamed there:
// everything measured was lost.
func TestResultPathThatIsADirectoryIsRefusedBeforeTheLoad(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	dir := t.TempDir()
	o := e2etest.Stampede(t, 2*time.Minute, dir, "url", srv.URL, "-c", "1", "-d", "1s", "-o", dir)
	if o.Code != 2 || !strings.Contains(o.Stderr, "is a directory") {
		t.Errorf("exit %d, want 2 and \"is a directory\"\n%s", o.Code, o)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests sent before the result path was refused", n)
	}
}

// -o to a pipe (mkfifo; bash's -o >(jq .) is one too) gets the final
// result written into it, and stays a pipe. Before, the final rename
// replaced it with a regular file, and the same rename deleted
// /dev/null itself for a root user who wrote -o /dev/null.
func TestResultIntoAPipe(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	dir := t.TempDir()
	pipe, read := testserver.Pipe(t, "result.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "url", srv.URL, "-c", "1", "-d", "1s", "-o", pipe)
	if o.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", o.Code, o)
	}
	doc := read()
	if fi, err := os.Lstat(pipe); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a pipe (%v)", pipe, err)
	}
	r, err := result.Decode(doc)
	if err != nil {
		t.Fatalf("the pipe got no whole result: %v\n%.300s", err, doc)
	}
	if r.Totals.Requests == 0 || r.Run.Partial {
		t.Errorf("result through the pipe: %d requests, partial %v", r.Totals.Requests, r.Run.Partial)
	}
	// --keep-failures keeps its file beside the result: not beside a pipe.
	// A reader is there (O_RDWR: one that never waits for the end).
	holder, err := os.OpenFile(pipe, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	plan := e2etest.WritePlan(t, "target: "+srv.URL+"\nscenarios:\n  s: {steps: [{get: /}]}\nload: {stages: [{duration: 1s, users: 1}]}\n", nil)
	o = e2etest.Stampede(t, 2*time.Minute, dir, "run", plan, "-q", "-o", pipe, "--keep-failures", "1")
	if o.Code != 2 || !strings.Contains(o.Stderr, "device or a pipe") {
		t.Errorf("--keep-failures with -o PIPE: exit %d, want 2 naming the pipe\n%s", o.Code, o)
	}
}
