package dist

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// A closed plan of 3 tenants × 3 users (1 of scenario a, 2 of b) ramping
// up and holding. Every user sends one request and then thinks far past
// the end, so the requests are exactly the users that ever started,
// whatever the timing. Users are striped across segments, so --workers 3
// must run the same users — ids, tenants, scenarios — as one process: no
// segment retires a user on the ramp to start a replacement with another
// id, and each segment's max_users (its stripe of the peak) adds up.
func TestWorkersSplitClosedRamp(t *testing.T) {
	dir := t.TempDir()
	srv, url := serveTenants(t)
	plan := oneUserPerRequestPlan(t, dir, "ramp", url, "{count: 3}",
		"    - {duration: 1s, users: 0 -> 1}\n    - {duration: 1s, users: 1}\n")
	oneRun, _ := runOneAndWorkers(t, dir, plan, srv, 3)
	if len(oneRun.users) != 9 {
		t.Errorf("one process: %d requests, want 9 (3 tenants × 3 users, one each):\n%s", len(oneRun.users), strings.Join(oneRun.users, "\n"))
	}

	one, err := result.Read(filepath.Join(dir, "one.json"))
	if err != nil {
		t.Fatal(err)
	}
	three, err := result.Read(filepath.Join(dir, "many.json"))
	if err != nil {
		t.Fatal(err)
	}
	if one.Run.MaxUsers != 9 || three.Run.MaxUsers != 9 {
		t.Errorf("max_users: %d in one process, %d merged; want 9", one.Run.MaxUsers, three.Run.MaxUsers)
	}
	if three.Totals.Requests != 9 || three.Run.Partial {
		t.Errorf("merged: %d requests (want 9), partial %v (%s)", three.Totals.Requests, three.Run.Partial, three.Run.PartialReason)
	}
	for i := 0; i < 3; i++ {
		seg, err := result.Read(filepath.Join(dir, "many.segments", fmt.Sprintf("seg-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		if seg.Run.MaxUsers != 3 {
			t.Errorf("segment %d: max_users %d, want 3 (its stripe of 9)", i, seg.Run.MaxUsers)
		}
	}
}
