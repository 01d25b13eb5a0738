package collect

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpStates are the kernel's socket states in /proc/net/tcp order (the st
// column is the index, in hex, counting from 1).
var tcpStates = [...]string{
	"", "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2",
	"time_wait", "close", "close_wait", "last_ack", "listen", "closing", "new_syn_recv",
}

type hostCollector struct {
	// portUsed is reused between samples: a 64 Ki bitmap of local ports in
	// use, to count distinct ephemeral ports without a map per sample.
	portUsed [65536 / 64]uint64
	buf      []byte
}

func newHostCollector() *hostCollector { return &hostCollector{buf: make([]byte, 64<<10)} }

func (c *hostCollector) open(ctx context.Context) error {
	_, err := os.Stat(filepath.Join(procRoot, "stat"))
	return err
}

func (c *hostCollector) close() {}

func (c *hostCollector) sample(ctx context.Context, e *emitter) error {
	if err := c.cpu(e); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(procRoot, "loadavg")); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				e.gauge("load1", "", v)
			}
		}
	}
	if err := c.mem(e); err != nil {
		return err
	}
	if err := c.tcp(e); err != nil {
		return err
	}
	return c.net(e)
}

func (c *hostCollector) cpu(e *emitter) error {
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return err
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return fmt.Errorf("%s/stat: unexpected first line %q", procRoot, line)
	}
	var v [8]float64 // user nice system idle iowait irq softirq steal
	for i := range v {
		v[i], _ = strconv.ParseFloat(f[i+1], 64)
	}
	// guest time is already inside user, so it is left out of the total.
	total := v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
	e.ratio("cpu.user_pct", "pct", v[0]+v[1], total, 100)
	e.ratio("cpu.system_pct", "pct", v[2]+v[5]+v[6], total, 100)
	e.ratio("cpu.iowait_pct", "pct", v[4], total, 100)
	e.ratio("cpu.steal_pct", "pct", v[7], total, 100)
	e.ratio("cpu.busy_pct", "pct", total-v[3]-v[4], total, 100)
	return nil
}

func (c *hostCollector) mem(e *emitter) error {
	b, err := os.ReadFile(filepath.Join(procRoot, "meminfo"))
	if err != nil {
		return err
	}
	var total, avail float64
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseFloat(f[0], 64)
		switch k {
		case "MemTotal":
			total = n * 1024
		case "MemAvailable":
			avail = n * 1024
		}
	}
	e.gauge("mem.used_bytes", "bytes", total-avail)
	e.gauge("mem.available_bytes", "bytes", avail)
	return nil
}

// tcp counts sockets by state over IPv4 and IPv6, and how much of the
// ephemeral port range local sockets hold: a client out of ports shows a
// wall of time_wait and ephemeral_used_pct near 100 long before errors say
// "cannot assign requested address".
func (c *hostCollector) tcp(e *emitter) error {
	var counts [len(tcpStates)]float64
	clear(c.portUsed[:])
	lo, hi := ephemeralRange()
	var used float64
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, "net", name))
		if err != nil {
			if name == "tcp6" {
				continue // IPv6 disabled
			}
			return err
		}
		err = scanTCP(f, c.buf, func(port uint16, st int) {
			if st > 0 && st < len(counts) {
				counts[st]++
			}
			if st != 10 && int(port) >= lo && int(port) <= hi {
				w, bit := port/64, uint64(1)<<(port%64)
				if c.portUsed[w]&bit == 0 {
					c.portUsed[w] |= bit
					used++
				}
			}
		})
		f.Close()
		if err != nil {
			return err
		}
	}
	for st := 1; st < len(tcpStates); st++ {
		e.gauge("tcp."+tcpStates[st], "count", counts[st])
	}
	if hi >= lo {
		e.gauge("tcp.ephemeral_used_pct", "pct", used/float64(hi-lo+1)*100)
	}
	return nil
}

func ephemeralRange() (int, int) {
	b, err := os.ReadFile(filepath.Join(procRoot, "sys/net/ipv4/ip_local_port_range"))
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, err1 := strconv.Atoi(f[0])
			hi, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil {
				return lo, hi
			}
		}
	}
	return 32768, 60999 // the kernel default
}

// scanTCP calls fn with each socket's local port and state. It reads only
// the two columns it needs, since under port exhaustion the file has tens
// of thousands of lines every second.
func scanTCP(r io.Reader, buf []byte, fn func(port uint16, st int)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(buf, 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false // header
			continue
		}
		line := sc.Bytes()
		// "  sl  local_address rem_address   st ..."
		var fields [4][]byte
		n := 0
		for i := 0; i < len(line) && n < 4; {
			for i < len(line) && line[i] == ' ' {
				i++
			}
			j := i
			for j < len(line) && line[j] != ' ' {
				j++
			}
			if j > i {
				fields[n] = line[i:j]
				n++
			}
			i = j
		}
		if n < 4 {
			continue
		}
		local := fields[1]
		k := bytes.LastIndexByte(local, ':')
		if k < 0 {
			continue
		}
		port, err1 := strconv.ParseUint(string(local[k+1:]), 16, 16)
		st, err2 := strconv.ParseUint(string(fields[3]), 16, 8)
		if err1 != nil || err2 != nil {
			continue
		}
		fn(uint16(port), int(st))
	}
	return sc.Err()
}

// net reports bytes/s through the machine's interfaces, loopback apart:
// a test against a server on this machine moves everything over lo, and
// that should not read as network traffic.
func (c *hostCollector) net(e *emitter) error {
	b, err := os.ReadFile(filepath.Join(procRoot, "net/dev"))
	if err != nil {
		return err
	}
	var rx, tx, lo float64
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if len(f) < 9 {
			continue
		}
		r, _ := strconv.ParseFloat(f[0], 64)
		t, _ := strconv.ParseFloat(f[8], 64)
		if name == "lo" {
			lo += r
			continue
		}
		rx += r
		tx += t
	}
	e.rate("net.rx_bytes_per_sec", "bytes/s", rx, 1)
	e.rate("net.tx_bytes_per_sec", "bytes/s", tx, 1)
	e.rate("net.loopback_bytes_per_sec", "bytes/s", lo, 1)
	return nil
}
