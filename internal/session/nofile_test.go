package session

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// TestNoResultFile: a session without a result file (stampede url without
// -o) runs, checkpoints and judges as any other, writes nothing, and on
// the second Ctrl-C says the partial result was not saved, not where it is.
func TestNoResultFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // where a file named "" would go
	var stderr bytes.Buffer
	sigs := make(chan os.Signal, 2)
	exits := make(chan int, 1)
	s, err := Open(Options{Stderr: &stderr, Signals: sigs, Exit: func(code int) { exits <- code }})
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{started: make(chan struct{}), body: func(ctx context.Context, c Control) (*result.Result, error) {
		c.Checkpoint(res(5, true, "checkpoint"))
		return res(10, false, ""), nil
	}}
	oc := s.Run(f)
	if oc.Result == nil || oc.Result.Totals.Requests != 10 || oc.SaveErr != nil || oc.Err() != nil || s.Path() != "" {
		t.Fatalf("outcome %+v, err %v, path %q", oc, oc.Err(), s.Path())
	}
	s.Close()

	s, err = Open(Options{Stderr: &stderr, Signals: sigs, Exit: func(code int) { exits <- code }})
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	g := &fake{started: make(chan struct{}), body: func(ctx context.Context, c Control) (*result.Result, error) {
		<-block
		return nil, nil
	}}
	go func() {
		<-g.started
		sigs <- os.Interrupt
		sigs <- os.Interrupt
	}()
	g.snap = func(reason string) *result.Result { return res(3, true, reason) }
	oc = s.Run(snapFake{g})
	if !oc.Quit || <-exits != ExitRun || oc.Result == nil {
		t.Fatalf("second Ctrl-C: %+v", oc)
	}
	if !strings.Contains(stderr.String(), "not saved") || strings.Contains(stderr.String(), "partial result in") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written without a result file: %v", ents)
	}
}
