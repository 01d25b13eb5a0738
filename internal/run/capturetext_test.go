package run

import (
	"strings"
	"testing"
)

// A WebSocket capture that finds nothing is worded as an HTTP step's
// (`capture "id" found nothing`, vu.judge), so a plan's failures read
// alike whichever protocol they came over.
func TestWSCaptureFailureReadsAsHTTPs(t *testing.T) {
	if got := (&captureError{name: "id"}).Error(); !strings.HasPrefix(got, `capture "id" found nothing`) {
		t.Errorf("WebSocket capture failure %q", got)
	}
}
