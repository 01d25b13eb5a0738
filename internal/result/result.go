// Package result defines the versioned JSON result file of a run, and
// writes and reads it. Reports, comparisons and merges read only this.
package result

import (
	"time"
)

// Schema is the value of the "schema" field of every result file we write.
const Schema = "stampede.result/v1"

// Result is one run (or one merged set of segments).
type Result struct {
	Schema     string        `json:"schema"`
	Tool       Tool          `json:"tool"`
	Plan       PlanInfo      `json:"plan"`
	Run        RunInfo       `json:"run"`
	Totals     Totals        `json:"totals"`
	Steps      []Step        `json:"steps"`
	Series     Series        `json:"series"`
	Generator  Generator     `json:"generator"`
	Thresholds []Threshold   `json:"thresholds"`
	Indicators []Indicator   `json:"indicators"`
	Samples    []ErrorSample `json:"error_samples,omitempty"`
	// ErrorsTop is how many distinct failure messages each step keeps
	// (Step.Errors); merges keep as many. 0: DefaultErrorsTop.
	ErrorsTop int `json:"errors_top,omitempty"`
	// Levels holds one complete result per level of a gates, sweep or
	// capacity run, in the order they ran.
	Levels []Level `json:"levels,omitempty"`
	// Connections summarises the persistent-connection scenarios
	// (connections.go); nil when the plan has none.
	Connections *Connections `json:"connections,omitempty"`
	// TLS counts and times the TLS handshakes of HTTP connections
	// (tls.go); nil when the run made none.
	TLS *TLS `json:"tls,omitempty"`
	// Monitors holds the server-side series sampled beside the load, keyed
	// like "postgres.connections.active", on the clock of Series.
	Monitors map[string]MonitorSeries `json:"monitors,omitempty"`
	// MonitorProblems are monitors that could not start, failed samples
	// and monitors that did not stop in time.
	MonitorProblems []MonitorProblem `json:"monitor_problems,omitempty"`
	// Workflow is the setup, teardown and renewals of a plan that has
	// them (workflow.go); nil otherwise.
	Workflow *Workflow `json:"workflow,omitempty"`
}

// Level is one level of a multi-level run (gates, sweep, capacity search).
type Level struct {
	Vary  string  `json:"vary"` // "users", "rate" or "tenants"
	Value float64 `json:"value"`
	// SLO holds the level's verdicts (gates) or the capacity search's SLOs.
	SLO    []Threshold `json:"slo,omitempty"`
	Pass   bool        `json:"pass"`
	Result *Result     `json:"result"`
	// RampS is how long the level took to put its population in place
	// (all users started, every connection open or failed), where its
	// measured part begins; RampPlannedS is the ramp the plan asked for.
	// RampOverran: the population came later than planned. NotInPlace,
	// when set, says why the level was measured without all of its
	// population, or not at all; such a level fails.
	RampS        float64 `json:"ramp_s"`
	RampPlannedS float64 `json:"ramp_planned_s"`
	RampOverran  bool    `json:"ramp_overran,omitempty"`
	NotInPlace   string  `json:"not_in_place,omitempty"`
	// Suspect, when set, says why the level's figures say more about the
	// generator than the target (its lag); sweeps and compares mark such
	// a level instead of judging it.
	Suspect string `json:"suspect,omitempty"`
}

// Tool names the program that wrote the file.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// PlanInfo identifies the plan. Source has ${ENV} references unexpanded.
type PlanInfo struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Source string `json:"source"`
	Target string `json:"target"`
}

// Segment is this run's share of a distributed test.
type Segment struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// RunInfo describes how the run went.
type RunInfo struct {
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// DurationS is the measured span from the first scheduled start to the
	// end of the last stage (not counting the grace period).
	DurationS float64 `json:"duration_s"`
	Model     string  `json:"model"` // "open" or "closed"
	Paced     bool    `json:"paced,omitempty"`
	// LatencyFrom says what latencies count from: "intended" (open model
	// and paced closed model: the scheduled start, free of coordinated
	// omission) or "send" (closed model: service time as a user sees it only
	// when nothing queues in front of the generator).
	LatencyFrom   string  `json:"latency_from"`
	Segment       Segment `json:"segment"`
	Partial       bool    `json:"partial"`
	PartialReason string  `json:"partial_reason,omitempty"`
	// StopReason says why a complete run ended before its last stage, such
	// as a unique data source running out of rows.
	StopReason string  `json:"stop_reason,omitempty"`
	MaxUsers   int     `json:"max_users,omitempty"`
	PeakRate   float64 `json:"peak_rate,omitempty"`
	// Seed is what the users' random draws came from; a plan given
	// `seed: N` repeats them. Merged results keep it only when every part
	// drew from the same one.
	Seed *uint64 `json:"seed,omitempty"`
	// TestID is the testid label the run's prometheus-rw and otlp series
	// carry (--testid, or the one made for the run), to find them from
	// the result; empty when the run streamed to neither.
	TestID string `json:"testid,omitempty"`
	// Engine is what ran the HTTP users: "loop" (the event-loop engine,
	// internal/evloop) or "goroutines"; empty in results from before it
	// was recorded, and without HTTP users. A merge of parts that ran
	// different engines says EngineMixed.
	Engine string `json:"engine,omitempty"`
	// LateStartS is how long after its start time (--start-at) the load
	// began, when that is over 0.1 s: a setup that overran the instant,
	// or a process that came up within --start-grace after it. The load
	// runs on the shared schedule, so the profile's first LateStartS
	// seconds were not sent (arrivals and users due then are skipped, not
	// counted), and DurationS is the time from Started+LateStartS on.
	// Rounded to the millisecond. Merged results keep the latest
	// segment's.
	LateStartS float64 `json:"late_start_s,omitempty"`
	// IDsReached is set on a level of a segment process (gates, sweep
	// and capacity with --workers or on Kubernetes): the highest {{ vu }}
	// and iteration counter its users reached, so its coordinator numbers
	// the next level's users after them, as one process does.
	IDsReached *IDsReached `json:"ids_reached,omitempty"`
}

// IDsReached is how far a level's users numbered (RunInfo.IDsReached).
type IDsReached struct {
	// VU is the highest {{ vu }} the level's users were given.
	VU int64 `json:"vu"`
	// Iter is the highest iteration counter ({{ iter }}) they reached.
	Iter int64 `json:"iter"`
}

// Totals sums every step.
type Totals struct {
	Requests   int64            `json:"requests"`
	Successful int64            `json:"successful"`
	Failed     int64            `json:"failed"`
	ByClass    map[string]int64 `json:"by_class"`
	LatencyOK  Latency          `json:"latency_ok"`
	LatencyAll Latency          `json:"latency_all"`
	Iterations int64            `json:"iterations"`
}

// Latency is an HDR histogram (1µs..1h, 3 significant digits, values in
// microseconds) and the figures computed from it. The figures are a
// convenience; HDR is the truth and every figure is recomputed from it.
type Latency struct {
	HDR    string  `json:"hdr"` // base64 of the HDR V2 compressed encoding
	Count  int64   `json:"count"`
	MinUS  int64   `json:"min_us"`
	MaxUS  int64   `json:"max_us"`
	AvgUS  float64 `json:"avg_us"`
	P50US  int64   `json:"p50_us"`
	P75US  int64   `json:"p75_us"`
	P90US  int64   `json:"p90_us"`
	P95US  int64   `json:"p95_us"`
	P99US  int64   `json:"p99_us"`
	P999US int64   `json:"p99_9_us"`
}

// Step is one request step of a scenario.
type Step struct {
	Scenario   string           `json:"scenario"`
	Name       string           `json:"name"`
	Group      string           `json:"group,omitempty"`
	Requests   int64            `json:"requests"`
	Successful int64            `json:"successful"`
	Failed     int64            `json:"failed"`
	ByClass    map[string]int64 `json:"by_class"`
	LatencyOK  Latency          `json:"latency_ok"`
	LatencyAll Latency          `json:"latency_all"`
	// Statuses counts every HTTP status the step got, successes included,
	// keyed by the code ("200"); requests that got no answer are not in it.
	Statuses map[string]int64 `json:"statuses,omitempty"`
	// Errors are the step's distinct failure messages, most frequent
	// first (errors.go); OtherErrors counts, per class, the failures whose
	// message was not kept. For every class, the counts of its messages
	// plus OtherErrors add up to ByClass.
	Errors      []StepError      `json:"errors,omitempty"`
	OtherErrors map[string]int64 `json:"other_errors,omitempty"`
}

// Series holds per-interval figures; every slice has one value per
// interval, and T is the interval's start in seconds from the run start.
type Series struct {
	IntervalS float64            `json:"interval_s"`
	T         []float64          `json:"t"`
	Started   []int64            `json:"started"`
	Completed []int64            `json:"completed"`
	OK        []int64            `json:"ok"`
	Failed    map[string][]int64 `json:"failed"`
	P50US     []int64            `json:"p50_us"`
	P95US     []int64            `json:"p95_us"`
	P99US     []int64            `json:"p99_us"`
	Active    []int64            `json:"active"`
	InFlight  []int64            `json:"in_flight"`
	Dropped   []int64            `json:"dropped"`
	LagP99US  []int64            `json:"lag_p99_us"`
	// Target is the intended users (closed) or arrivals/s (open) at the
	// interval's start.
	Target []float64 `json:"target"`
	// Connections is the number of persistent connections (WebSocket,
	// SignalR) open at the interval's end; absent without any.
	Connections []int64 `json:"connections,omitempty"`
}

// Generator is the load generator's account of its own health.
type Generator struct {
	// Lag is actual minus intended start of iterations.
	Lag Latency `json:"lag"`
	// CPUSeconds is user+system CPU of the generator process over the run.
	CPUSeconds float64 `json:"cpu_s"`
	// CPUPerRequestUS is CPUSeconds over requests, in microseconds.
	CPUPerRequestUS float64 `json:"cpu_per_request_us"`
	// CPUUtil is CPUSeconds over (duration × usable cores), 0..1.
	CPUUtil float64 `json:"cpu_util"`
	Cores   int     `json:"cores"`
	// Host is the generator machine's host name. Merging segments that
	// ran on one machine (--workers) counts its cores once.
	Host         string `json:"host,omitempty"`
	MaxRSS       int64  `json:"max_rss_bytes"`
	GCPauseP99US int64  `json:"gc_pause_p99_us"`
}

// Threshold is one evaluated threshold.
type Threshold struct {
	Expr  string `json:"expr"`
	Value string `json:"value"` // the measured value, formatted
	Pass  bool   `json:"pass"`
	Error string `json:"error,omitempty"`
}

// Indicator is a finding about the run with the evidence behind it.
type Indicator struct {
	ID       string             `json:"id"`
	Severity string             `json:"severity"` // "warn" or "info"
	Message  string             `json:"message"`
	Evidence map[string]float64 `json:"evidence,omitempty"`
}

// ErrorSample keeps the text of a failure so people can see what "other"
// (or any class) actually was.
type ErrorSample struct {
	Step    string `json:"step"`
	Class   string `json:"class"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// EngineMixed is RunInfo.Engine of a merge whose parts ran different
// engines (or some recorded none).
const EngineMixed = "mixed"
