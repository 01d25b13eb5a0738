package docs

// resultKeyDocs describes the result keys whose fields in internal/result
// carry no comment, as "Type.key". A comment added to the field there
// takes over (and the entry here must go).
var resultKeyDocs = map[string]string{
	"Result.schema":        "the format's name and version: `stampede.result/v1`",
	"Result.tool":          "the stampede that wrote the file",
	"Result.plan":          "the plan that ran: its text and hash",
	"Result.run":           "how the run went: times, model, partial or not, seed, engine",
	"Result.totals":        "every request of the load, by outcome and failure class, with latency histograms",
	"Result.steps":         "the same per step of each scenario (connection operations included)",
	"Result.series":        "per-interval (per-second) series of the load",
	"Result.generator":     "the generator's own health: lag, CPU, memory, GC",
	"Result.thresholds":    "each threshold of the plan with its measured value and verdict",
	"Result.indicators":    "what the figures suggest (saturation, a dominant error class, ...), each with its evidence",
	"Result.error_samples": "failure messages kept as samples, with counts",

	"Tool.name":    "`stampede`",
	"Tool.version": "the version that wrote the file",

	"PlanInfo.name":   "the plan's `name`",
	"PlanInfo.file":   "the plan file's path as given",
	"PlanInfo.sha256": "the SHA-256 of the plan's text",
	"PlanInfo.source": "the plan's text, `${ENV}` references unexpanded and secret header values redacted",
	"PlanInfo.target": "the target, credentials left out",

	"Segment.index": "this result's segment, from 0 (0 of 1 for a whole run)",
	"Segment.count": "how many segments the test was cut into (1 for a whole run)",

	"RunInfo.started":        "when the run started",
	"RunInfo.ended":          "when it ended",
	"RunInfo.paced":          "a closed model with `pace:`",
	"RunInfo.segment":        "which segment of a distributed run this is",
	"RunInfo.partial":        "the run did not finish (Ctrl-C, a failure after measuring, a checkpoint): its figures cover what ran",
	"RunInfo.partial_reason": "why the result is partial",
	"RunInfo.max_users":      "closed model: the most users the profile asks for",
	"RunInfo.peak_rate":      "open model: the highest arrival rate the profile asks for, per second",

	"Totals.requests":    "every request outcome: successful + failed (a `dropped` arrival counts though nothing was sent)",
	"Totals.successful":  "requests that got an expected answer and passed every check and capture",
	"Totals.failed":      "failed requests; the sum of `by_class`",
	"Totals.by_class":    "failed requests per failure class (`timeout`, `server_error`, `dropped`, ...)",
	"Totals.latency_ok":  "latency of the successful requests",
	"Totals.latency_all": "latency of every request that was sent",
	"Totals.iterations":  "scenario iterations completed",

	"Latency.count":    "how many latencies the histogram holds",
	"Latency.min_us":   "the smallest, µs",
	"Latency.max_us":   "the largest, µs",
	"Latency.avg_us":   "the mean, µs",
	"Latency.p50_us":   "the median, µs (from the histogram)",
	"Latency.p75_us":   "the 75th percentile, µs",
	"Latency.p90_us":   "the 90th percentile, µs",
	"Latency.p95_us":   "the 95th percentile, µs",
	"Latency.p99_us":   "the 99th percentile, µs",
	"Latency.p99_9_us": "the 99.9th percentile, µs",

	"Step.scenario":    "the scenario the step belongs to",
	"Step.name":        "the step's name (its metric key)",
	"Step.group":       "the step's group in the Request Type Breakdown",
	"Step.requests":    "the step's request outcomes: successful + failed",
	"Step.successful":  "its successful requests",
	"Step.failed":      "its failed requests; the sum of `by_class`",
	"Step.by_class":    "its failures per class",
	"Step.latency_ok":  "latency of its successful requests",
	"Step.latency_all": "latency of its requests that were sent",

	"StepError.class":   "the failure class",
	"StepError.status":  "the HTTP status, when the failure had one",
	"StepError.message": "the failure message (secrets redacted)",
	"StepError.count":   "how many failures had this message",

	"Series.interval_s": "the length of one interval, seconds",
	"Series.t":          "seconds since the start at which each interval closed",
	"Series.started":    "iterations (arrivals) started in each interval",
	"Series.completed":  "requests completed in each interval, successful or failed",
	"Series.ok":         "successful requests per interval",
	"Series.failed":     "failed requests per interval, by class (only classes that occurred)",
	"Series.p50_us":     "each interval's median latency of successful requests, µs",
	"Series.p95_us":     "each interval's 95th percentile, µs",
	"Series.p99_us":     "each interval's 99th percentile, µs",
	"Series.active":     "users running at each interval's end",
	"Series.in_flight":  "requests in flight at each interval's end",
	"Series.dropped":    "arrivals dropped in each interval (no free slot, or too late to start)",
	"Series.lag_p99_us": "each interval's 99th percentile of generator lag (actual − intended start), µs",

	"Generator.cores":           "CPU cores the generator could use",
	"Generator.max_rss_bytes":   "the generator's peak resident memory, bytes (0 where the system does not say, as on Windows)",
	"Generator.gc_pause_p99_us": "the 99th percentile of Go GC pauses during the run, µs",

	"Threshold.expr":  "the threshold as written (for a level, named by the level)",
	"Threshold.pass":  "whether it held",
	"Threshold.error": "why it could not be evaluated, when it could not",

	"Indicator.id":       "the indicator's name (`saturated`, `errors_dominated`, `timeouts_clustered`, `server_limit`, `connection_errors`, `closed_model`)",
	"Indicator.message":  "what it says, in a sentence",
	"Indicator.evidence": "the figures it rests on, by name",

	"ErrorSample.step":    "the step that failed",
	"ErrorSample.class":   "the failure class",
	"ErrorSample.message": "the failure message (secrets redacted)",
	"ErrorSample.count":   "how many failures it stands for",

	"Level.value":  "the level's users, arrivals per second or tenants",
	"Level.pass":   "whether the level met every SLO and threshold",
	"Level.result": "the level's complete result, shaped like the top level",

	"Connections.scenarios": "one entry per connection scenario",

	"ConnScenario.scenario":                    "the scenario's name",
	"ConnScenario.stateful_reconnect_failures": "see `stateful_reconnects`",
	"ConnScenario.recovered":                   "see `stateful_reconnects`",
	"ConnScenario.duplicates":                  "see `stateful_reconnects`",
	"ConnScenario.lost":                        "see `stateful_reconnects`",
	"ConnScenario.messages_in":                 "messages received",
	"ConnScenario.messages_out":                "messages sent",
	"ConnScenario.bytes_in":                    "bytes received",
	"ConnScenario.bytes_out":                   "bytes sent",

	"TLS.handshakes": "TLS handshakes made: full + resumed + failed",
	"TLS.full":       "full handshakes",
	"TLS.resumed":    "handshakes that resumed a session",
	"TLS.failed":     "handshakes that failed",
	"TLS.duration":   "how long the handshakes took (kept out of every latency from the send; a latency from the intended start holds the wait)",

	"MonitorSeries.t": "seconds since the start of each sample",
	"MonitorSeries.v": "each sample's value, in `unit`",

	"MonitorProblem.monitor": "the monitor's name",
	"MonitorProblem.message": "what went wrong",
	"MonitorProblem.t":       "seconds since the start, first time",
	"MonitorProblem.last_t":  "seconds since the start, last time (for a repeated problem)",
	"MonitorProblem.count":   "how many times it happened",

	"Phase.requests": "requests the phase sent",
	"Phase.failed":   "those that failed",
	"Phase.steps":    "the phase's steps, as the load's `steps`",

	"Workflow.setup":    "the `setup:` phase, when the plan has one",
	"Workflow.teardown": "the `teardown:` phase, when the plan has one",
}
