package dist

import (
	"bytes"
	"fmt"

	"github.com/stampede-load/stampede/internal/plan"
)

// plainCredentials refuses a plan that holds a credential in its own text
// (a password in the target URL, an Authorization, Cookie or secret_headers
// value): the plan goes into a ConfigMap, which whoever may read the
// namespace can read, and kubectl shows. Credentials written as ${NAME}
// come from a Secret through --env-from-secret instead.
func plainCredentials(p *plan.Plan, file string, src []byte) error {
	red := []byte(p.Redact(string(src)))
	if bytes.Equal(red, src) {
		return nil
	}
	at := 0
	for at < len(src) && at < len(red) && src[at] == red[at] {
		at++
	}
	line := bytes.Count(src[:at], []byte("\n")) + 1
	col := at - bytes.LastIndexByte(src[:at], '\n')
	return fmt.Errorf("%s:%d:%d: the plan holds a credential in plain text, and a ConfigMap is readable by whoever may read its namespace: write it as ${NAME} (target: https://user:${PASSWORD}@host, or the header's value) and pass --env-from-secret SECRET, a Secret holding NAME",
		file, line, col)
}
