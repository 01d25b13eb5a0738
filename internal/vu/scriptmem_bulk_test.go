package vu

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/plan/lang"
)

// Each builtin that fills or copies a whole array, buffer or string in one
// native call fails the step with a RangeError naming the bound, before it
// allocates: sobek would make each of these in one call the heap watch
// cannot interrupt (a []Value appended to 1e9 entries for fill and
// Array.from, a 1 GB string for join, one make of 10 GB for ArrayBuffer).
// The test also holds each case's allocations (the script's own strings
// included) under 256 MiB.
func TestScriptBulkBuiltinsAreBounded(t *testing.T) {
	// The bound is what is tested, not the time: under the race detector
	// on a loaded machine, walking up to the bound outlasted the 5 s
	// script limit and the step failed for its time instead.
	defer lang.ScriptTimeLimit.Store(lang.ScriptTimeLimit.Load())
	lang.ScriptTimeLimit.Store(int64(10 * time.Minute))
	for _, tc := range []struct{ script, want string }{
		{`const a = []; a.length = 1e9; a.fill(0)`, "RangeError: a script may make an array of at most 1048576, not 1000000000"},
		{`new Array(1e9).fill(0)`, "an array of at most 1048576, not 1000000000"},
		{`Array(1e9).join("x")`, "an array of at most 1048576, not 1000000000"},
		{`Array(1e6).join("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")`, "a string of at most 33554432, not 39999960"},
		{`const s = "x".repeat(1 << 24); Array(64).fill(s).join("")`, "a string of at most 33554432, not 50331648"},
		{`Array.from({length: 1e9})`, "an array of at most 1048576, not 1000000000"},
		{`Array.from(new Array(1e9))`, "an array of at most 1048576, not 1000000000"},
		{`new Array(1e9).toReversed()`, "an array of at most 1048576, not 1000000000"},
		{`new Array(1e9).toSorted()`, "an array of at most 1048576, not 1000000000"},
		{`new Array(1e9).with(0, 1)`, "an array of at most 1048576, not 1000000000"},
		{`new Array(1e9).toSpliced(0, 0, 1)`, "an array of at most 1048576, not 1000000001"},
		{`const s = "x".repeat(1 << 24); s.concat(s, s)`, "a string of at most 33554432, not 50331648"},
		{`[...new Array(1e9).keys()]`, "an array of at most 1048576, not 1000000000"},
		{`[...new Array(1e9)]`, "an array of at most 1048576, not 1000000000"},
		{`Array.from(new Array(1e9).entries())`, "an array of at most 1048576, not 1000000000"},
		{`[...new Uint8Array(1 << 25)]`, "an array of at most 1048576, not 33554432"},
		{`[...new Uint8Array(1 << 25).entries()]`, "an array of at most 1048576, not 33554432"},
		{`[..."x".repeat(1 << 25)]`, "an array of at most 1048576, not 33554432"},
		{`"x".repeat(1 << 25).split("")`, "an array of at most 1048576, not 33554432"},
		{`"ab".repeat(1 << 24).split("a")`, "an array of at most 1048576, not 16777217"},
		{`"x".repeat(1 << 20).replaceAll("x", "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy")`, "a string of at most 33554432, not 42991616"},
		{"\"x\".repeat(1 << 17).replaceAll(\"x\", \"$`\")", "a string of at most 33554432, not"},
		{`"x".repeat(1 << 25).replaceAll("", "y")`, "a string of at most 33554432, not 67108865"},
		{`new ArrayBuffer(1e10)`, "a buffer in bytes of at most 33554432, not 10000000000"},
		{`new Float64Array(1e9)`, "a buffer in bytes of at most 33554432, not 8000000000"},
		{`new Uint8Array({length: 1e9})`, "a buffer in bytes of at most 33554432, not 1000000000"},
		{`Uint8Array.from({length: 1e9})`, "a buffer in bytes of at most 33554432, not 1000000000"},
		{`new (new Uint8Array(1).constructor)(1e10)`, "a buffer in bytes of at most 33554432, not 10000000000"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			msg := stepFailure(t, tc.script)
			runtime.ReadMemStats(&after)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("the step failed with %q, want %q", msg, tc.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
				t.Fatalf("the case allocated %d MiB", grew>>20)
			}
		})
	}
}

// Within the bound, the wrapped builtins behave as ever.
func TestScriptBulkBuiltinsWithinBound(t *testing.T) {
	// What is tested is that the builtins work within the bound, not how
	// fast: under the race detector on a loaded machine the script once
	// outlasted the 5 s script limit (6.7 s) and failed for its time.
	defer lang.ScriptTimeLimit.Store(lang.ScriptTimeLimit.Load())
	lang.ScriptTimeLimit.Store(int64(10 * time.Minute))
	script := `const ok = [1, 2, 3].fill(0, 1).join() === "1,0,0" &&
[1, [2, 3]].join("-") === "1-2,3" && String([1, 2]) === "1,2" &&
Array.from({length: 2}, (_, i) => i).join() === "0,1" && Array.from("ab").join() === "a,b" &&
[3, 1, 2].toSorted().join() === "1,2,3" && [1, 2].toReversed().join() === "2,1" &&
[1, 2].with(0, 9).join() === "9,2" && [1, 2, 3].toSpliced(1, 1).join() === "1,3" &&
"a".concat("b", 1) === "ab1" &&
[...[1, 2].keys()].join() === "0,1" && [...[5]].join() === "5" && [..."ab"].join() === "a,b" &&
[...new Uint8Array([1, 2])].join() === "1,2" && [...new Int8Array(2).keys()].join() === "0,1" &&
"a,b,,c".split(",").length === 4 && "abc".split("").join("-") === "a-b-c" && "a,b,c".split(",", 2).join() === "a,b" &&
"a.b.c".replaceAll(".", "$\x60") === "aaba.bc" && "aXbX".replaceAll("X", (m) => m + m) === "aXXbXX" &&
"ab".replaceAll("", "-") === "-a-b-" && Object.entries({a: 1}).length === 1 &&
(() => { const a = []; a.length = 2 ** 20; return a.fill(7)[2 ** 20 - 1] === 7; })() && new ArrayBuffer(8).byteLength === 8 &&
new Uint16Array([1, 2]).length === 2 && new Uint8Array(new ArrayBuffer(4), 1).length === 3 &&
new Uint8Array(2) instanceof Uint8Array && new ArrayBuffer(1) instanceof ArrayBuffer &&
Uint8Array.from([1, 2]).length === 2 && new Float64Array(4).subarray(1).length === 3 &&
new Int32Array([1, 2]).map((x) => x * 2).join() === "2,4" && ArrayBuffer.isView(new Uint8Array(1));
if (!ok) fail("builtins changed");`
	if msg := stepFailure(t, script); msg != "" {
		t.Fatalf("the script within the bound failed: %s", msg)
	}
}

// stepFailure runs script before the signed POST and returns the POST
// step's error message, or "" when the request was sent.
func stepFailure(t *testing.T, script string) string {
	t.Helper()
	base, good, bad := signServer(t)
	plan := strings.Replace(signPlan, `header("X-Nonce", response.headers["x-nonce"]);`,
		`header("X-Nonce", response.headers["x-nonce"]);`+"\n          "+"{ "+strings.ReplaceAll(script, "\n", "\n          ")+" }", 1)
	u, sc, rec := bodyUser(t, t.TempDir(), plan, base, httpc.Options{})
	iterate(t, u, sc, 1)
	if good.Load() == 1 {
		return ""
	}
	if bad.Load() != 0 {
		t.Fatalf("a request after the failed script was sent")
	}
	post := rec.Snapshot().Steps[1]
	if post.ByClass["check"] != 1 || len(post.Errors) == 0 {
		t.Fatalf("POST step %v %+v, want a check failure", post.ByClass, post.Errors)
	}
	return post.Errors[0].Message
}
