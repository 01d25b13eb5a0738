package result

// TLS counts the TLS handshakes of a run's HTTP connections and times
// them as their own phase: a handshake is not part of any request's
// latency figure but of the connection that carried it. Handshakes = Full
// + Resumed (each completed one is either) and Duration holds exactly
// those; Failed counts handshakes that did not complete (their requests
// fail with their own class).
type TLS struct {
	Handshakes int64   `json:"handshakes"`
	Full       int64   `json:"full"`
	Resumed    int64   `json:"resumed"`
	Failed     int64   `json:"failed"`
	Duration   Latency `json:"duration"`
}
