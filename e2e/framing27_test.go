package e2e

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
)

// TestFramingRulesBothEngines: through the binary, on the event-loop
// engine and the goroutine engine, a status 000 and conflicting
// Content-Lengths are malformed answers (class other, each request
// counted once, none a timeout) and a Transfer-Encoding whose final
// coding is not chunked is read to the close (a success). Before, 000
// was counted ok, the conflicting lengths ended as timeouts and
// "chunked, gzip" was read as chunked (issue 27).
func TestFramingRulesBothEngines(t *testing.T) {
	engines := []string{"goroutines"}
	if runtime.GOOS == "linux" {
		engines = append(engines, "loop")
	}
	cases := []struct {
		name   string
		srv    func(testing.TB) *hostile.Server
		class  string
		sample string
	}{
		{"status 000", hostile.StatusZero, "other", "status 000 is not an HTTP status"},
		{"conflicting content-length", hostile.ConflictingContentLength, "other", "conflicting Content-Length values 2 and 50"},
		{"chunked, gzip", hostile.ChunkedNotLast, "ok", ""},
	}
	for _, tc := range cases {
		for _, engine := range engines {
			t.Run(fmt.Sprintf("%s/%s", tc.name, engine), func(t *testing.T) {
				srv := tc.srv(t)
				out := filepath.Join(t.TempDir(), "r.json")
				o := e2etest.Stampede(t, 60*time.Second, "", "url", "-c", "2", "-d", "500ms", "--timeout", "3s", "--engine", engine, "-o", out, srv.URL+"/")
				res := e2etest.ReadResult(t, out)
				if res.Run.Engine != engine {
					t.Fatalf("ran on %q, want %q\n%s", res.Run.Engine, engine, o)
				}
				checkSums(t, res)
				tt := res.Totals
				got := tt.ByClass[tc.class]
				if tc.class == "ok" {
					got = tt.Successful
				}
				if tt.Requests == 0 || got != tt.Requests || tt.Requests != srv.Requests() {
					t.Errorf("requests %d (server saw %d), by class %v, ok %d: want every one %s", tt.Requests, srv.Requests(), tt.ByClass, tt.Successful, tc.class)
				}
				if tc.sample != "" && !strings.Contains(samplesOf(res, tc.class), tc.sample) {
					t.Errorf("samples %q, want %q", samplesOf(res, tc.class), tc.sample)
				}
			})
		}
	}
}
