package vu

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/httpc"
)

// A builtin that makes one huge string in a single allocation fails the
// step with a RangeError before allocating: the heap watch stops a call
// between instructions only, and "x".repeat(2**31) is one instruction.
// Strings within the bound are made as before.
func TestScriptOneAllocationStringsAreBounded(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`"x".repeat(2 ** 31)`, "RangeError: a string of 2147483648 characters"},
		{`"ab".repeat(2 ** 30)`, "RangeError: a string of 2147483648 characters"},
		{`"".padStart(2 ** 31, "y")`, "RangeError: a string of 2147483648 characters"},
		{`"".padEnd(2 ** 31)`, "RangeError: a string of 2147483648 characters"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			base, good, bad := signServer(t)
			plan := strings.Replace(signPlan, `header("X-Nonce", response.headers["x-nonce"]);`,
				`header("X-Nonce", response.headers["x-nonce"]);`+"\n          "+tc.script+";", 1)
			u, sc, rec := bodyUser(t, t.TempDir(), plan, base, httpc.Options{})
			iterate(t, u, sc, 1)
			if good.Load()+bad.Load() != 0 {
				t.Fatalf("the request after the failed script was sent")
			}
			post := rec.Snapshot().Steps[1]
			if post.ByClass["check"] != 1 || !strings.Contains(post.Errors[0].Message, tc.want) {
				t.Fatalf("POST step %v %+v, want a check failure saying %q", post.ByClass, post.Errors, tc.want)
			}
		})
	}
	// Within the bound, the builtins behave as ever.
	base, good, _ := signServer(t)
	plan := strings.Replace(signPlan, `header("X-Nonce", response.headers["x-nonce"]);`,
		`header("X-Nonce", response.headers["x-nonce"]);`+"\n          "+
			`if ("ab".repeat(3) !== "ababab" || "7".padStart(3, "0") !== "007" || "7".padEnd(2) !== "7 ") fail("builtins changed");`, 1)
	u, sc, _ := bodyUser(t, t.TempDir(), plan, base, httpc.Options{})
	iterate(t, u, sc, 1)
	if good.Load() != 1 {
		t.Fatalf("the script with bounded strings failed")
	}
}
