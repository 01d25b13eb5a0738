package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// writeGz writes a .csv.gz of header then body repeated to n bytes,
// streaming, so this process stays small (a child's peak RSS read from
// rusage starts at its parent's).
func writeGz(t *testing.T, path, header string, chunk []byte, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	zw.Write([]byte(header))
	for w := int64(0); w < n; w += int64(len(chunk)) {
		if _, err := zw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// runBounded runs the binary with args and returns its outcome and peak RSS
// in bytes. The peak is the child's own high-water mark (VmHWM), read from
// /proc while it runs: ru_maxrss would start at this test process's size
// at fork, and with the e2e tests running in parallel under -race that is
// over a gigabyte before the child does anything.
func runBounded(t *testing.T, limit time.Duration, args ...string) (code int, stderr string, rss int64) {
	t.Helper()
	cmd := exec.Command(e2etest.Bin, args...)
	cmd.Env = append(os.Environ(), "STAMPEDE_DEBUG=")
	var errb bytes.Buffer
	cmd.Stderr, cmd.Stdout = &errb, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(limit, func() { cmd.Process.Kill() })
	defer timer.Stop()
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if v := vmHWM(status); v > hwm {
				hwm = v
			}
			select {
			case <-done:
				peak <- hwm
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	cmd.Wait()
	close(done)
	rss = <-peak
	if rss == 0 {
		// Never seen running (it ended within the first look): the
		// rusage figure is an upper bound.
		if ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage); ru != nil {
			rss = ru.Maxrss << 10
		}
	}
	return cmd.ProcessState.ExitCode(), errb.String(), rss
}

// vmHWM reads a process's peak resident set from its /proc status file
// (0 when it cannot be read, as after the process has exited).
func vmHWM(statusFile string) int64 {
	b, err := os.ReadFile(statusFile)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// A compressed data file that expands past what a run can hold is refused
// at the plan's data entry, within a bounded memory: before, a 1 MB
// .csv.gz of a gigabyte of rows grew the generator to 9.57 GB and killed
// it with Go's fatal "out of memory" (exit 2, a goroutine dump), and a
// single line of gigabytes was buffered whole.
func TestDataFileBombsAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := bytes.Repeat([]byte("1,2\n"), 1<<14)
	writeGz(t, filepath.Join(dir, "rows.csv.gz"), "a,b\n", rows, 300<<20)
	line := bytes.Repeat([]byte("x"), 1<<16)
	writeGz(t, filepath.Join(dir, "line.csv.gz"), "a\n", line, 64<<20)
	for _, c := range []struct{ file, want string }{
		{"rows.csv.gz", "MiB of memory"},
		{"line.csv.gz", "has a row longer than"},
	} {
		plan := filepath.Join(dir, "plan-"+c.file+".yaml")
		os.WriteFile(plan, []byte(`target: http://127.0.0.1:1
data:
  d: {file: `+c.file+`}
scenarios:
  s: {steps: [{get: "/?a={{ data.d.a }}"}]}
load: {stages: [{duration: 1s, users: 1}]}
`), 0o644)
		code, stderr, rss := runBounded(t, 120*time.Second, "validate", plan)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 saying %q:\n%.2000s", c.file, code, c.want, stderr)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(filepath.Base(plan)) + `:3:\d+`).MatchString(stderr) {
			t.Errorf("%s: the error does not point at the plan's data entry (file:line:col):\n%.2000s", c.file, stderr)
		}
		if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "fatal error") {
			t.Errorf("%s: Go runtime output reached the user:\n%.2000s", c.file, stderr)
		}
		t.Logf("%s: peak RSS %d MB", c.file, rss>>20)
		if rss > 512<<20 {
			t.Errorf("%s: peak RSS %d MB, want at most 512 MB", c.file, rss>>20)
		}
	}
}
