//go:build unix

// Package e2etest is what the end-to-end test packages share: building the
// real stampede binary once for all of them (see sharedBinary), running it
// with a time limit, and the plan, result and port helpers around that. It
// is plain Go so those packages can import it; nothing outside tests
// should. It drives processes by Unix signals and process groups, so it
// builds on Unix only.
package e2etest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// Set by Main before any test runs.
var (
	// Bin is the stampede binary built for this test binary.
	Bin string
	// ModRoot is the module root (where go.mod is).
	ModRoot string
	// Shared is a directory that lives as long as the test binary, for
	// results more than one test reads.
	Shared string
)

// Main builds ./cmd/stampede into a temporary directory, runs the tests and
// removes the directory. name prefixes its messages. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/x")) }
//
// Set STAMPEDE_E2E_RACE=1 to build the binary with the race detector (much
// slower; raise -timeout).
func Main(m *testing.M, name string) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot find the module root: %v\n", name, err)
		return 1
	}
	ModRoot = root
	dir, err := os.MkdirTemp("", "stampede-"+strings.NewReplacer("_", "-", "/", "-").Replace(name)+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	defer os.RemoveAll(dir)
	Shared = dir
	bin, err := sharedBinary(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	Bin = bin
	return m.Run()
}

// moduleRoot asks the go command for go.mod, and walks up from the test's
// directory when that fails.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err == nil {
		if p := strings.TrimSpace(string(out)); p != "" && p != os.DevNull {
			return filepath.Dir(p), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}

// ---------------------------------------------------------------------------
// Running the binary.

// Outcome is what one finished stampede process left behind.
type Outcome struct {
	Code    int
	Stdout  string
	Stderr  string
	Elapsed time.Duration
}

func (o Outcome) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout ---\n%s--- stderr ---\n%s", o.Code, o.Elapsed.Round(time.Millisecond), o.Stdout, o.Stderr)
}

// Stampede runs the binary with args in dir (the module root when empty)
// and fails the test if it does not end within limit.
func Stampede(t testing.TB, limit time.Duration, dir string, args ...string) Outcome {
	t.Helper()
	return Start(t, dir, nil, args...).Wait(t, limit)
}

// Proc is a running stampede process.
type Proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	started        time.Time
	done           chan struct{}
	err            error
}

// Start starts the binary with args in dir (the module root when empty),
// with env added to the test's environment. It runs in a process group of
// its own, so a run that hangs is killed along with a demo target it
// started; the process is killed at cleanup if still running.
func Start(t testing.TB, dir string, env []string, args ...string) *Proc {
	t.Helper()
	if dir == "" {
		dir = ModRoot
	}
	p := &Proc{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(Bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	// STAMPEDE_DEBUG in the developer's shell would change what is printed.
	p.cmd.Env = append(append(os.Environ(), "STAMPEDE_DEBUG="), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child left holding the output pipes must not keep the test waiting.
	p.cmd.WaitDelay = 5 * time.Second
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start stampede: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.kill()
			<-p.done
		}
	})
	return p
}

// kill ends the process group; a group already gone is what it wants.
func (p *Proc) kill() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// Stderr is what the process has written to stderr so far, for a test
// that waits on what it says before acting.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Signal sends sig to the stampede process itself (not its group), as a
// terminal's Ctrl-C reaches the foreground process.
func (p *Proc) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// Wait waits for the process to end, killing it and failing the test after
// limit. A non-zero exit is not a failure: it is in the Outcome.
func (p *Proc) Wait(t testing.TB, limit time.Duration) Outcome {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		_ = p.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump helps; a process already gone has none
		time.Sleep(200 * time.Millisecond)
		p.kill()
		<-p.done
		o := p.outcome()
		t.Fatalf("stampede %s did not end within %v\n%s", strings.Join(p.cmd.Args[1:], " "), limit, o)
	}
	o := p.outcome()
	if p.err != nil {
		var ee *exec.ExitError
		if !errors.As(p.err, &ee) {
			t.Fatalf("stampede: %v\n%s", p.err, o)
		}
	}
	return o
}

func (p *Proc) outcome() Outcome {
	o := Outcome{Stdout: p.stdout.String(), Stderr: p.stderr.String(), Elapsed: time.Since(p.started)}
	if p.cmd.ProcessState != nil {
		o.Code = p.cmd.ProcessState.ExitCode()
	}
	return o
}

// syncBuffer lets a test read output while the process still writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ---------------------------------------------------------------------------
// Plans and results.

// WritePlan writes a plan (and any extra files, name → content) to a fresh
// directory and returns the plan's path.
func WritePlan(t testing.TB, yaml string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReadResult reads a result file as every reader of results does, so the
// schema and the count and histogram invariants are checked too.
func ReadResult(t testing.TB, path string) *result.Result {
	t.Helper()
	r, err := result.Read(path)
	if err != nil {
		t.Fatalf("read result: %v", err)
	}
	return r
}

// ---------------------------------------------------------------------------
// Ports.

// FreePort is a loopback port nothing listens on (a moment ago), for a
// server the test starts itself.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
