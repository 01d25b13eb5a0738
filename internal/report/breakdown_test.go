package report

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"github.com/stampede-load/stampede/internal/sample"
)

// Every failure class shows in the text report's Error Breakdown, so its
// lines add up to the failed count. Before, protocol and server_close (new
// SignalR classes) were known to the binary yet on no line, not even
// Other: 16 failures vanished from a breakdown of 21.
// lineCount is a breakdown line's own count: the first number after its
// label's colon (labels hold colons only at their end).
var lineCount = regexp.MustCompile(`(?m)^  .*?:\s+(\d+)`)

func TestErrorBreakdownShowsEveryClass(t *testing.T) {
	for _, cl := range sample.FailureClasses() {
		var b bytes.Buffer
		errorBreakdown(&b, map[string]int64{cl.String(): 7})
		var sum int64
		for _, m := range lineCount.FindAllStringSubmatch(b.String(), -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			sum += n
		}
		if sum != 7 {
			t.Errorf("class %s: the breakdown's lines add up to %d, want 7:\n%s", cl, sum, b.String())
		}
	}
}
