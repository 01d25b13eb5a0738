package result

import "testing"

// TestTLSCheck: a tls block whose counts do not add up, or whose
// histogram holds another number of handshakes, is refused.
func TestTLSCheck(t *testing.T) {
	h := NewHistogram()
	h.RecordValue(800)
	h.RecordValue(120)
	good := TLS{Handshakes: 2, Full: 1, Resumed: 1, Duration: LatencyOf(h)}
	if err := good.Check(); err != nil {
		t.Fatalf("consistent block: %v", err)
	}
	var none *TLS
	if err := none.Check(); err != nil {
		t.Errorf("no block: %v", err)
	}
	for name, bad := range map[string]TLS{
		"sum":       {Handshakes: 3, Full: 1, Resumed: 1, Duration: LatencyOf(h)},
		"histogram": {Handshakes: 1, Full: 1, Duration: LatencyOf(h)},
		"negative":  {Handshakes: 2, Full: 3, Resumed: -1, Duration: LatencyOf(h)},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%s: %+v accepted", name, bad)
		}
		r := Result{TLS: &bad}
		if err := r.Check(); err == nil {
			t.Errorf("%s: a result holding %+v passed Check", name, bad)
		}
	}
}
