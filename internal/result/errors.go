package result

import (
	"fmt"
	"sort"
	"strconv"
)

// DefaultErrorsTop is how many distinct failure messages a step keeps when
// the run does not say.
const DefaultErrorsTop = 20

// StepError is one distinct failure message of a step: what the server
// answered (status, reason and the start of the body), the transport's
// error text, or a check's explanation, with how many failures said it.
type StepError struct {
	Class   string `json:"class"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// SortErrors orders messages most frequent first, with a stable order for
// equal counts so reports and diffs do not shuffle.
func SortErrors(es []StepError) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Class != b.Class {
			return a.Class < b.Class
		}
		if a.Status != b.Status {
			return a.Status < b.Status
		}
		return a.Message < b.Message
	})
}

// CombineErrors adds up message lists (of one step, from several shards or
// segments): equal messages add, the top most frequent are kept and the
// rest join others, per class, so every class still sums exactly. others
// may hold nil maps. top <= 0 means DefaultErrorsTop.
func CombineErrors(top int, lists [][]StepError, others []map[string]int64) ([]StepError, map[string]int64) {
	if top <= 0 {
		top = DefaultErrorsTop
	}
	type key struct {
		class  string
		status int
		msg    string
	}
	idx := map[key]int{}
	var all []StepError
	for _, l := range lists {
		for _, e := range l {
			k := key{e.Class, e.Status, e.Message}
			if i, ok := idx[k]; ok {
				all[i].Count += e.Count
				continue
			}
			idx[k] = len(all)
			all = append(all, e)
		}
	}
	other := map[string]int64{}
	for _, o := range others {
		for c, n := range o {
			other[c] += n
		}
	}
	SortErrors(all)
	if len(all) > top {
		for _, e := range all[top:] {
			other[e.Class] += e.Count
		}
		all = all[:top:top]
	}
	for c, n := range other {
		if n == 0 {
			delete(other, c)
		}
	}
	if len(other) == 0 {
		other = nil
	}
	return all, other
}

// AddCounts adds named counts (statuses, disconnect reasons, pushes) into
// dst, making dst only when there is something to add, so an empty map
// stays absent in the JSON as it was in the inputs.
func AddCounts(dst, src map[string]int64) map[string]int64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]int64{}
	}
	for k, n := range src {
		dst[k] += n
	}
	return dst
}

// SortedStatuses lists a step's status codes in numeric order.
func SortedStatuses(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, ea := strconv.Atoi(keys[i])
		b, eb := strconv.Atoi(keys[j])
		if ea != nil || eb != nil {
			return keys[i] < keys[j]
		}
		return a < b
	})
	return keys
}

// CheckErrorCounts verifies that, for every failure class of the step,
// its messages and other_errors add up to the class count. A step without
// any messages (a result from before they existed) passes.
func (s *Step) CheckErrorCounts() error {
	if len(s.Errors) == 0 && len(s.OtherErrors) == 0 {
		return nil
	}
	sum := map[string]int64{}
	for _, e := range s.Errors {
		if e.Count <= 0 {
			return fmt.Errorf("step %q: message %q has count %d", s.Name, e.Message, e.Count)
		}
		sum[e.Class] += e.Count
	}
	for c, n := range s.OtherErrors {
		sum[c] += n
	}
	for c, n := range s.ByClass {
		if sum[c] != n {
			return fmt.Errorf("step %q: class %s counts %d, its messages %d", s.Name, c, n, sum[c])
		}
	}
	for c, n := range sum {
		if s.ByClass[c] != n {
			return fmt.Errorf("step %q: messages of class %s count %d, the class %d", s.Name, c, n, s.ByClass[c])
		}
	}
	return nil
}

// SinceErrors returns what a step's statuses and messages counted after
// an earlier snapshot b of the same run (a level's steady part). A message
// that b had but a cut since counts in other_errors of both, so each class
// still sums to the difference of its counts.
func SinceErrors(a, b Step) Step {
	out := a
	out.Statuses = nil
	for k, n := range a.Statuses {
		if d := n - b.Statuses[k]; d > 0 {
			if out.Statuses == nil {
				out.Statuses = map[string]int64{}
			}
			out.Statuses[k] = d
		}
	}
	if len(a.Errors) == 0 && len(a.OtherErrors) == 0 {
		return out
	}
	type key struct {
		class  string
		status int
		msg    string
	}
	prev := map[key]int64{}
	for _, e := range b.Errors {
		prev[key{e.Class, e.Status, e.Message}] = e.Count
	}
	out.Errors = nil
	kept := map[string]int64{}
	for _, e := range a.Errors {
		e.Count -= prev[key{e.Class, e.Status, e.Message}]
		if e.Count > 0 {
			out.Errors = append(out.Errors, e)
			kept[e.Class] += e.Count
		}
	}
	out.OtherErrors = nil
	for c, n := range a.ByClass {
		rest := n - b.ByClass[c] - kept[c]
		// A message evicted and admitted again between the snapshots can
		// make the difference of its counts larger than what happened in
		// between; the excess comes off the smallest messages.
		for i := len(out.Errors) - 1; rest < 0 && i >= 0; i-- {
			if out.Errors[i].Class != c {
				continue
			}
			cut := min(out.Errors[i].Count, -rest)
			out.Errors[i].Count -= cut
			rest += cut
		}
		if rest > 0 {
			if out.OtherErrors == nil {
				out.OtherErrors = map[string]int64{}
			}
			out.OtherErrors[c] = rest
		}
	}
	live := out.Errors[:0]
	for _, e := range out.Errors {
		if e.Count > 0 {
			live = append(live, e)
		}
	}
	out.Errors = live
	if len(out.Errors) == 0 {
		out.Errors = nil
	}
	SortErrors(out.Errors)
	return out
}

// FlatSamples is the flat error_samples list that readers from before
// per-step messages show: as they wrote it, one line per step and class,
// counting all of the class's failures, under its most frequent message.
// It keeps the file small: the messages themselves are in Steps.
func FlatSamples(steps []Step) []ErrorSample {
	var out []ErrorSample
	for _, st := range steps {
		seen := map[string]bool{}
		for _, e := range st.Errors { // most frequent first
			if seen[e.Class] {
				continue
			}
			seen[e.Class] = true
			out = append(out, ErrorSample{Step: st.Name, Class: e.Class, Message: e.Message, Count: st.ByClass[e.Class]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Class < out[j].Class
	})
	return out
}
