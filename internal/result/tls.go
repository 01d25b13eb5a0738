package result

import "fmt"

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

// Check holds the block to its sums: Handshakes = Full + Resumed, each
// timed once, no count below zero. A nil block (no TLS) passes.
func (t *TLS) Check() error {
	if t == nil {
		return nil
	}
	if t.Full < 0 || t.Resumed < 0 || t.Failed < 0 {
		return fmt.Errorf("tls: negative count (full %d, resumed %d, failed %d)", t.Full, t.Resumed, t.Failed)
	}
	if t.Handshakes != t.Full+t.Resumed {
		return fmt.Errorf("tls.handshakes is %d but full %d + resumed %d = %d", t.Handshakes, t.Full, t.Resumed, t.Full+t.Resumed)
	}
	if t.Duration.Count != t.Handshakes {
		return fmt.Errorf("tls.duration holds %d handshakes but tls.handshakes is %d", t.Duration.Count, t.Handshakes)
	}
	return checkLatency("tls.duration", t.Duration)
}
