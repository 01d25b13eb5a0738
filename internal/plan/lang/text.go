package lang

import (
	"sort"
	"strconv"
	"strings"
)

// q quotes text for an error message, clipped and with control characters
// escaped so the message stays on one line (as the plan's messages do).
func q(s string) string {
	const most = 40
	if len(s) > most {
		n := most
		for n > 0 && s[n]&0xC0 == 0x80 {
			n--
		}
		s = s[:n] + "..."
	}
	return strconv.Quote(s)
}

// UnknownVar is the error of a var the plan does not define, in a
// template and in an expression alike.
func UnknownVar[V any](name string, vars map[string]V) string {
	return "unknown var " + q(name) + ": " + available("the plan defines", "the plan has no vars", keys(vars))
}

// UnknownData is the error of a data source the plan does not define, in
// a template and in an expression alike.
func UnknownData[V any](name string, data map[string]V) string {
	return "unknown data source " + q(name) + ": " + available("the plan defines", "the plan has no data sources", keys(data))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func available(some, none string, names []string) string {
	if len(names) == 0 {
		return none
	}
	return some + " " + strings.Join(names, ", ")
}

const hexDigits = "0123456789abcdef"

// AppendUUID formats 128 random bits as a version 4, variant 1 UUID.
func AppendUUID(dst []byte, hi, lo uint64) []byte {
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // variant 10xx
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}
