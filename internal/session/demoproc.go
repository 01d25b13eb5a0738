package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// demoOptionsEnv carries the demo's options to the child process.
const demoOptionsEnv = "STAMPEDE_DEMO_OPTIONS"

// startDemoProcess serves the demo target from a child process rather than
// in ours: on a shared machine the target's CPU would otherwise be counted
// as the generator's, and the generator-health figures would lie.
func startDemoProcess(options string) (url string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(exe, "demo", "--addr", "127.0.0.1:0", "--print-url")
	// Options travel in the environment, not argv, because they may hold a
	// database password and argv is visible to every user in ps.
	cmd.Env = append(os.Environ(), demoOptionsEnv+"="+options)
	cmd.SysProcAttr = demoChildAttrs()
	cmd.Stderr = os.Stderr
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
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(7 * time.Second):
			cmd.Process.Kill()
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
