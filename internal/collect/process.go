package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procRoot is where /proc is; tests point it at a fixture tree.
var procRoot = "/proc"

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is
// part of Linux's user-space ABI and 100 on every architecture Go supports;
// reading it would take sysconf, which means cgo.
const clockTicks = 100

// procCollector watches one pid, or every process with a given name (nginx
// and PostgreSQL run as many), summed.
type procCollector struct {
	spec Spec
	pid  int // > 0: a fixed pid; 0: match by name
	name string
	// last holds each pid's cumulative counters from the previous sample;
	// the totals below grow by per-pid deltas, so a worker that exits or a
	// new one that starts never makes the sum jump or go backwards.
	last                map[procKey]procCounters
	cpuTicks, vcs, nvcs float64
	fdWarned            bool
	pageSize            float64
}

type procKey struct {
	pid   int
	start uint64 // starttime: tells a reused pid from the old process
}

type procCounters struct{ ticks, vcs, nvcs float64 }

func newProcCollector(sp Spec) *procCollector {
	c := &procCollector{spec: sp, last: map[procKey]procCounters{}, pageSize: float64(os.Getpagesize())}
	if n, err := strconv.Atoi(sp.Target); err == nil && n > 0 {
		c.pid = n
	} else {
		c.name = sp.Target
	}
	return c
}

func (c *procCollector) open(ctx context.Context) error {
	pids, err := c.pids()
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		return c.notFound()
	}
	return nil
}

func (c *procCollector) notFound() error {
	if c.pid > 0 {
		return fmt.Errorf("no process with pid %d", c.pid)
	}
	return fmt.Errorf("no process named %q is running", c.name)
}

func (c *procCollector) pids() ([]int, error) {
	if c.pid > 0 {
		if _, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(c.pid))); err != nil {
			return nil, nil
		}
		return []int{c.pid}, nil
	}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if procNameMatches(pid, c.name) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// procNameMatches compares name with the process's comm (which the kernel
// cuts to 15 bytes) and with the base name of its argv[0], so both "nginx"
// and "postgres" (whose workers retitle their argv) are found.
func procNameMatches(pid int, name string) bool {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	if comm, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
		c := strings.TrimSpace(string(comm))
		if c == name || (len(name) > 15 && c == name[:15]) {
			return true
		}
	}
	cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil || len(cmd) == 0 {
		return false
	}
	argv0, _, _ := bytes.Cut(cmd, []byte{0})
	// A retitled process puts "postgres: writer" in argv[0].
	first, _, _ := strings.Cut(string(argv0), " ")
	first = strings.TrimSuffix(first, ":")
	return filepath.Base(first) == name
}

type procStat struct {
	key                 procKey
	ticks, threads, rss float64
	vcs, nvcs, fds      float64
	fdOK                bool
}

func readProc(pid int, pageSize float64) (procStat, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procStat{}, err
	}
	// comm may hold spaces and parentheses; the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("%s/stat: no ')'", dir)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("%s/stat: %d fields", dir, len(f)+2)
	}
	num := func(n int) float64 { v, _ := strconv.ParseFloat(f[n-3], 64); return v }
	st := procStat{
		ticks:   num(14) + num(15),
		threads: num(20),
		rss:     num(24) * pageSize,
	}
	st.key.pid = pid
	st.key.start, _ = strconv.ParseUint(f[22-3], 10, 64)
	if s, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		for line := range strings.SplitSeq(string(s), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch k {
			case "voluntary_ctxt_switches":
				st.vcs, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			case "nonvoluntary_ctxt_switches":
				st.nvcs, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	if fds, err := os.ReadDir(filepath.Join(dir, "fd")); err == nil {
		st.fds, st.fdOK = float64(len(fds)), true
	}
	return st, nil
}

func (c *procCollector) sample(ctx context.Context, e *emitter) error {
	pids, err := c.pids()
	if err != nil {
		return err
	}
	var n, rss, threads, fds float64
	fdOK := true
	seen := make(map[procKey]procCounters, len(pids))
	for _, pid := range pids {
		st, err := readProc(pid, c.pageSize)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // exited between listing and reading
			}
			return err
		}
		n++
		rss += st.rss
		threads += st.threads
		fds += st.fds
		fdOK = fdOK && st.fdOK
		cur := procCounters{st.ticks, st.vcs, st.nvcs}
		if prev, ok := c.last[st.key]; ok {
			c.cpuTicks += max(cur.ticks-prev.ticks, 0)
			c.vcs += max(cur.vcs-prev.vcs, 0)
			c.nvcs += max(cur.nvcs-prev.nvcs, 0)
		}
		seen[st.key] = cur
	}
	c.last = seen
	if n == 0 {
		return c.notFound()
	}
	e.gauge("procs", "count", n)
	// Percent of one core, as top shows it: 250 means two and a half cores.
	e.rate("cpu_pct", "pct", c.cpuTicks/clockTicks, 100)
	e.gauge("rss_bytes", "bytes", rss)
	e.gauge("threads", "count", threads)
	if fdOK {
		e.gauge("fds", "count", fds)
	} else if !c.fdWarned {
		c.fdWarned = true
		e.warn("cannot read open file descriptors (/proc/PID/fd needs the same user or root); fds is not recorded")
	}
	e.rate("ctx_switches.voluntary_per_sec", "1/s", c.vcs, 1)
	e.rate("ctx_switches.involuntary_per_sec", "1/s", c.nvcs, 1)
	return nil
}

func (c *procCollector) close() {}
