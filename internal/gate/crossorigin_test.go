package gate

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// A redirect to another origin the event loop failed is named with the
// engine that follows it, however few such failures there are.
func TestLoopCrossOriginIndicator(t *testing.T) {
	r := &result.Result{}
	r.Totals.Requests, r.Totals.Successful, r.Totals.Failed = 1000, 997, 3
	r.Totals.ByClass = map[string]int64{"redirects": 3}
	r.Steps = []result.Step{{Name: "GET /", Requests: 1000, Successful: 997, Failed: 3, ByClass: map[string]int64{"redirects": 3},
		Errors: []result.StepError{{Class: "redirects", Status: 302, Message: "302 to http://other/x: " + sample.LoopCrossOrigin + "; run with --engine goroutines", Count: 3}}}}
	var found *result.Indicator
	for _, ind := range Indicators(r) {
		if ind.ID == "loop_cross_origin" {
			found = &ind
		}
	}
	if found == nil || !strings.Contains(found.Message, "--engine goroutines") || found.Evidence["redirects"] != 3 {
		t.Fatalf("indicator %+v", found)
	}
	r.Steps[0].Errors[0].Message = "302 /loop after 10 redirects"
	for _, ind := range Indicators(r) {
		if ind.ID == "loop_cross_origin" {
			t.Errorf("a redirect loop named as the engine's limit: %+v", ind)
		}
	}
}
