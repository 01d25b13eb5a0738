package session

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/plan"
)

// DemoOptionsEnv carries the demo's options to the child process.
const DemoOptionsEnv = "STAMPEDE_DEMO_OPTIONS"

// startDemoProcess serves the demo target from a child process rather than
// in ours: on a shared machine the target's CPU would otherwise be counted
// as the generator's, and the generator-health figures would lie.
func (pr Process) startDemoProcess(options string) (url string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(exe, "demo", "--addr", "127.0.0.1:0", "--print-url")
	// Options travel in the environment, not argv, because they may hold a
	// database password and argv is visible to every user in ps.
	cmd.Env = append(pr.environ(), DemoOptionsEnv+"="+options)
	cmd.SysProcAttr = demoChildAttrs()
	cmd.Stderr = pr.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(7 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "http://") {
			stop()
			return "", nil, fmt.Errorf("demo target did not start (said %q)", line)
		}
		return line, stop, nil
	case <-time.After(10 * time.Second):
		stop()
		return "", nil, fmt.Errorf("demo target did not start within 10s")
	}
}

// DescribeDemo is how the demo's settings are shown: redacted, since the
// options may hold the demo database's password.
func DescribeDemo(o demo.Options) string {
	if s := o.Redacted(); s != "" {
		return s
	}
	return "default settings"
}

// startDemo starts the demo target a plan with target: demo asks for, as
// --demo sets it; stop ends it. A plan with another target gets no demo,
// and refuses --demo.
func (pr Process) startDemo(p *plan.Plan, demoOpts string, quiet bool) (url string, stop func(), err error) {
	if p.Target != "demo" {
		if demoOpts != "" {
			return "", nil, Fail(ExitUsage, errors.New("--demo applies only to plans with target: demo"))
		}
		return "", func() {}, nil
	}
	dopts, err := demo.ParseOptions(demoOpts)
	if err != nil {
		return "", nil, Fail(ExitUsage, fmt.Errorf("--demo: %v", err))
	}
	url, stop, err = pr.startDemoProcess(dopts.String())
	if err != nil {
		return "", nil, Fail(ExitRun, fmt.Errorf("start demo target: %v", err))
	}
	if !quiet {
		fmt.Fprintf(pr.Stderr, "demo target at %s (%s)\n", url, DescribeDemo(dopts))
	}
	return url, stop, nil
}
