package gate

import "strconv"

// String names a verdict in test failures; the program prints exit codes
// and reasons, never a verdict's name.
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Incomplete:
		return "incomplete"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}
