package lang

import (
	"fmt"
	"strings"

	"github.com/grafana/sobek"
)

// boundBulk bounds the builtins that, in sobek, fill or copy a whole array,
// buffer or string inside one native call (read from sobek's
// builtin_array.go, builtin_typedarrays.go and builtin_string.go): the heap
// watch interrupts between instructions only, so
// `a.length = 1e9; a.fill(0)` (a []Value grown to 16 GB by appends),
// `Array(1e9).join("x")`, `Array.from({length: 1e9})`,
// `new ArrayBuffer(1e10)` or `new Float64Array(1e9)` (one make) would reach
// Go's fatal out of memory before the watch could look. Each refuses, with
// a RangeError naming the bound, a result past maxScriptString elements,
// characters or bytes, or an array past maxScriptArray elements.
// `new Array(1e9)` alone stays allowed: sobek only sets its length.
//
// A spread or Array.from over a native iterator also runs in one call
// (sobek's pushArraySpread appends every value inside one instruction), so
// the iterators of an array or string too long to copy are refused.
var boundBulk = fmt.Sprintf(`(function (lim, arrayLim, count) {
  const too = (n, what) => {
    const max = what === "an array" ? arrayLim : lim;
    if (n > max) throw new RangeError("a script may make " + what + " of at most " + max + ", not " + n);
  };
  const len = (o) => {
    const n = Math.floor(Number(o == null ? 0 : o.length));
    return n > 0 ? n : 0;
  };
  const define = (obj, name, value) =>
    Object.defineProperty(obj, name, {writable: true, configurable: true, value: value});
  const wrap = (obj, name, check) => {
    const orig = obj[name];
    define(obj, name, function (...args) {
      check(this, args);
      return orig.apply(this, args);
    });
  };
  const rel = (v, l, dflt) => {
    if (v === undefined) return dflt;
    const n = Math.trunc(Number(v)) || 0;
    return n < 0 ? Math.max(l + n, 0) : Math.min(n, l);
  };
  const A = Array.prototype;
  wrap(A, "fill", (o, a) => {
    const l = len(o);
    too(rel(a[2], l, l) - rel(a[1], l, 0), "an array");
  });
  wrap(A, "join", (o, a) => {
    const l = len(o);
    if (l === 0) return;
    too(l, "an array");
    const sep = a[0] === undefined ? 1 : String(a[0]).length;
    let n = (l - 1) * sep;
    too(n, "a string");
    for (let i = 0; i < l; i++) {
      const e = o[i];
      if (typeof e === "string") n += e.length;
      too(n, "a string");
    }
  });
  for (const name of ["toReversed", "toSorted", "with"]) wrap(A, name, (o) => too(len(o), "an array"));
  wrap(A, "toSpliced", (o, a) => {
    const l = len(o), start = rel(a[0], l, 0);
    const del = a.length < 2 ? l - start : Math.min(Math.max(Math.trunc(Number(a[1])) || 0, 0), l - start);
    too(l - del + Math.max(a.length - 2, 0), "an array");
  });
  wrap(Array, "from", (o, a) => too(len(a[0]), "an array"));
  wrap(String.prototype, "concat", (o, a) => {
    let n = String(o).length;
    for (const s of a) n += String(s).length;
    too(n, "a string");
  });
  // A function, not a Proxy: sobek's instanceof refuses a Proxy on its
  // right. The wrapper shares the prototype and inherits the statics, so
  // instanceof, from, of and species still work.
  const replace = (C, bytesOf) => {
    const wrapper = function (...args) {
      if (new.target === undefined) throw new TypeError("Constructor " + C.name + " requires 'new'");
      too(bytesOf(args), "a buffer in bytes");
      return Reflect.construct(C, args, new.target === wrapper ? C : new.target);
    };
    Object.setPrototypeOf(wrapper, C);
    Object.defineProperty(wrapper, "name", {value: C.name, configurable: true});
    Object.defineProperty(wrapper, "length", {value: C.length, configurable: true});
    wrapper.prototype = C.prototype;
    define(globalThis, C.name, wrapper);
    define(C.prototype, "constructor", wrapper);
  };
  const index = (v) => {
    const n = Math.trunc(Number(v));
    return n > 0 ? n : 0;
  };
  replace(ArrayBuffer, (a) => index(a[0]));
  for (const C of [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
      Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array]) {
    replace(C, (a) => (a[0] !== null && typeof a[0] === "object" ? len(a[0]) : index(a[0])) * C.BYTES_PER_ELEMENT);
  }
  for (const name of ["keys", "values", "entries"]) wrap(A, name, (o) => too(len(o), "an array"));
  define(A, Symbol.iterator, A.values);
  const TA = Object.getPrototypeOf(Uint8Array.prototype);
  for (const name of ["keys", "values", "entries"]) wrap(TA, name, (o) => too(len(o), "an array"));
  define(TA, Symbol.iterator, TA.values);
  wrap(String.prototype, Symbol.iterator, (o) => too(String(o).length, "an array"));
  wrap(String.prototype, "split", (o, a) => {
    const sep = a[0];
    if (sep === undefined || (sep !== null && typeof sep === "object")) return;
    const s = String(o), p = String(sep);
    let max = a[1] === undefined ? Infinity : a[1] >>> 0;
    if (p === "") return too(Math.min(s.length, max), "an array");
    too(Math.min(count(s, p) + 1, max), "an array");
  });
  wrap(String.prototype, "replaceAll", (o, a) => {
    const pat = a[0], rep = a[1];
    if ((pat !== null && typeof pat === "object") || typeof rep === "function") return;
    const s = String(o), p = String(pat), r = String(rep);
    // $\x60 and $' put in the text before and after the match: up to s.
    const per = r.length + (r.split("$\x60").length - 1 + r.split("$'").length - 1) * s.length;
    const n = p === "" ? s.length + 1 : count(s, p);
    too(s.length - n * p.length + n * per, "a string");
  });
})(%d, %d, globalThis.__countStrings);
delete globalThis.__countStrings;`, maxScriptString, maxScriptArray)

// installBounds bounds the builtins of rt. Counting a pattern's matches
// is done in Go: a loop of indexOf in the script allocates for every call
// and took seconds over a 32 Mi-character string.
func installBounds(rt *sobek.Runtime) error {
	if err := rt.Set("__countStrings", strings.Count); err != nil {
		return err
	}
	for _, bound := range []string{boundStrings, boundBulk} {
		if _, err := rt.RunString(bound); err != nil {
			return err
		}
	}
	return nil
}

// maxScriptArray bounds, in elements, the arrays those builtins may make:
// each element is a 16-byte slot (and a boxed index or a small string
// more), filled by appends that copy as they grow: 4 Mi elements filled
// grew the heap past the watch's 128 MiB budget, 2 Mi past its 64 MiB one; 1 Mi stay within it.
const maxScriptArray = 1 << 20
