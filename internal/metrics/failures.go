package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FailureLog writes complete failing exchanges, up to a number per step,
// as JSON lines to a side file of the result: the evidence behind an Errors
// line, for a user to replay with curl. Secrets are redacted before a line
// is written. Safe for concurrent use.
type FailureLog struct {
	per    int64
	taken  []atomic.Int64
	redact func(string) string
	// phase is what the samples' steps index: "load" (the result's
	// steps), "setup" or "teardown" (the workflow's).
	phase string
	out   *failureFile
}

// failureFile is the file the logs of a run's phases share. It is created
// with the first sample: a run that failed nothing leaves none.
type failureFile struct {
	path    string
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	err     error
	written int64
	closed  bool // no sample is kept after Close
}

// Phases of a failure sample (Exchange.Phase).
const (
	PhaseLoad     = "load"
	PhaseSetup    = "setup"
	PhaseTeardown = "teardown"
)

// Exchange is one failing request and what came back.
type Exchange struct {
	Time     time.Time `json:"time"`
	Scenario string    `json:"scenario"`
	Step     string    `json:"step"`
	// Phase is the part of the test the request was sent in: "load",
	// "setup" or "teardown".
	Phase string `json:"phase"`
	// StepIndex is the step's place among its phase's request steps (the
	// result's steps for the load, workflow.setup.steps or
	// workflow.teardown.steps), which tells two steps of one name apart:
	// merging the samples of several segments keeps up to N of each
	// (phase, step_index).
	StepIndex int            `json:"step_index"`
	Class     string         `json:"class"`
	Message   string         `json:"message"`
	Request   ExchangeReq    `json:"request"`
	Response  *ExchangeResp  `json:"response,omitempty"`
	Error     string         `json:"error,omitempty"`
	Timings   ExchangeTiming `json:"timings"`
}

// ExchangeReq is the request as sent.
type ExchangeReq struct {
	Method  string      `json:"method"`
	URL     string      `json:"url"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body,omitempty"`
	// BodyBytes is the body's full length; Body holds at most
	// MaxSampleRequestBody of it.
	BodyBytes int `json:"body_bytes"`
}

// ExchangeResp is the answer: status, headers and the body's start.
type ExchangeResp struct {
	Status  int         `json:"status"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body,omitempty"`
	// BodyBytes is the body's full length; Body holds at most its first
	// SampleResponseBody bytes, then "…" if it was cut.
	BodyBytes int64 `json:"body_bytes"`
}

// ExchangeTiming says when the request went and how long it took.
type ExchangeTiming struct {
	// SentAt is when the request was sent; LatencyMS is the latency the
	// run counted (from the intended start in the open model), ElapsedMS
	// from the send to the failure.
	SentAt    time.Time `json:"sent_at"`
	LatencyMS float64   `json:"latency_ms"`
	ElapsedMS float64   `json:"elapsed_ms"`
}

// SampleResponseBody is how much of a failed answer's body a sample keeps.
const SampleResponseBody = 1024

// MaxSampleRequestBody bounds the request body a sample keeps.
const MaxSampleRequestBody = 64 << 10

// FailuresPath is the side file of a result file: RESULT.failures.jsonl
// beside RESULT.json.
func FailuresPath(resultPath string) string {
	return strings.TrimSuffix(resultPath, ".json") + ".failures.jsonl"
}

// OpenFailureLog is the log for up to perStep exchanges per step in path.
// A file left there (a previous run's) is removed at once, so it cannot
// pass for this run's; the file is created with the first sample.
func OpenFailureLog(path string, perStep int) (*FailureLog, error) {
	// Checked now, so an unwritable place fails before the run, not at
	// its first failure.
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	f.Close()
	os.Remove(path)
	return &FailureLog{per: int64(perStep), redact: RedactURLCredentials, phase: PhaseLoad, out: &failureFile{path: path}}, nil
}

// forRecorder is the log of one recorder: its own count per step of its
// own steps, in its phase, writing to l's file.
func (l *FailureLog) forRecorder(phase string, steps int, redact func(string) string) *FailureLog {
	v := &FailureLog{per: l.per, taken: make([]atomic.Int64, steps), redact: l.redact, phase: phase, out: l.out}
	if v.phase == "" {
		v.phase = PhaseLoad
	}
	if redact != nil {
		v.redact = redact
	}
	return v
}

// Want reports whether step still takes samples; it is cheap, so a caller
// builds an Exchange only when it will be kept.
func (l *FailureLog) Want(step int) bool {
	return step < len(l.taken) && l.taken[step].Load() < l.per
}

// Add writes x as a sample of step, unless the step has its share.
func (l *FailureLog) Add(step int, x *Exchange) {
	if step >= len(l.taken) || l.taken[step].Add(1) > l.per {
		return
	}
	x.StepIndex = step
	x.Phase = l.phase
	l.clean(x)
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	// Bodies are often HTML; escaped as \u003c they would be unreadable.
	enc.SetEscapeHTML(false)
	err := enc.Encode(x)
	o := l.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if err == nil && o.f == nil && o.err == nil {
		if o.f, err = os.Create(o.path); err == nil {
			o.w = bufio.NewWriter(o.f)
		}
	}
	if err == nil && o.w != nil {
		_, err = o.w.Write(line.Bytes())
	}
	if err != nil && o.err == nil {
		o.err = err
	}
	o.written++
}

// Path is the file the samples go to; there is none before the first.
func (l *FailureLog) Path() string { return l.out.path }

// Written is how many samples the log holds.
func (l *FailureLog) Written() int64 {
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	return l.out.written
}

// Close flushes the file, if a sample made one; it returns the first
// write error.
func (l *FailureLog) Close() error {
	o := l.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	var err error
	if o.f != nil {
		err = o.w.Flush()
		if cerr := o.f.Close(); err == nil {
			err = cerr
		}
		o.f, o.w = nil, nil
	}
	if o.err != nil {
		return o.err
	}
	return err
}

// secretHeaders are headers whose values are credentials.
var secretHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "x-auth-token": true, "x-csrf-token": true, "x-xsrf-token": true,
}

// Redacted replaces a secret's value in samples.
const Redacted = "[redacted]"

func (l *FailureLog) clean(x *Exchange) {
	x.Request.URL = l.redact(x.Request.URL)
	x.Request.Body = l.redact(x.Request.Body)
	x.Message = l.redact(x.Message)
	x.Error = l.redact(x.Error)
	cleanHeaders(x.Request.Headers, l.redact)
	if x.Response != nil {
		x.Response.Body = l.redact(x.Response.Body)
		cleanHeaders(x.Response.Headers, l.redact)
	}
}

func cleanHeaders(h [][2]string, redact func(string) string) {
	for i := range h {
		if secretHeaders[strings.ToLower(h[i][0])] {
			h[i][1] = Redacted
			continue
		}
		h[i][1] = redact(h[i][1])
	}
}

// ErrorText is a transport error's text as a failure message: the local
// address of a connection (an ephemeral port, new for every connection) is
// left out, so "connection reset by peer" on a thousand connections is one
// message, not a thousand.
func ErrorText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Source != nil {
		s := err.Error()
		src := op.Source.String() + "->"
		return strings.Replace(s, src, "", 1)
	}
	return err.Error()
}
