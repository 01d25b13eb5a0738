package report

import (
	"fmt"
	"io"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/result"
)

// Warnings lists a multi-level run's warnings with their evidence under
// its table, so the table's headline has its reasoning beside it.
func Warnings(w io.Writer, ins []result.Indicator) {
	first := true
	for _, in := range ins {
		if in.Severity != gate.SeverityWarn {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nPerformance Indicators:")
			first = false
		}
		fmt.Fprintf(w, "  ! %s: %s\n", in.ID, in.Message)
	}
}
