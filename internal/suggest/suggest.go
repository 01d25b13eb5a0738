// Package suggest finds the word a user most likely meant when a key, a
// metric or a kind is misspelt, for "did you mean" hints. It imports
// nothing of stampede's, so packages plan and gate and the command line
// share one edit distance.
package suggest

import "strings"

// Key picks the valid key a user most likely meant: the closest within two
// edits (Levenshtein, over bytes), or else one that the key is a prefix of
// (or the other way round), since people abbreviate and pluralise. Only key
// is lower-cased, so valid is expected in lower case. "" when none is close.
// The plan's parser uses it for YAML keys and option names.
func Key(key string, valid []string) string {
	best, bestD := "", 3
	lk := strings.ToLower(key)
	for _, v := range valid {
		if d := distance([]byte(lk), []byte(v), false); d < bestD {
			best, bestD = v, d
		}
	}
	if best != "" {
		return best
	}
	if len(lk) >= 2 {
		for _, v := range valid {
			if strings.HasPrefix(v, lk) || strings.HasPrefix(lk, v) {
				return v
			}
		}
	}
	return ""
}

// Closest returns the candidate closest to s, ignoring case, when it is
// close enough to be a plausible typo: within two edits, or a third of the
// length of s for longer names. A swap of neighbours counts as one edit,
// the commonest typo in metric names. The threshold parser uses it.
func Closest(s string, cands []string) string {
	best, bestD := "", 0
	ls := []rune(strings.ToLower(s))
	for _, c := range cands {
		d := distance(ls, []rune(strings.ToLower(c)), true)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len([]rune(s))/3)
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// distance is the Levenshtein distance, and with swaps also counts a swap
// of neighbours as one edit. It keeps three rows, not the whole table.
func distance[T byte | rune](a, b []T, swaps bool) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if swaps && i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
