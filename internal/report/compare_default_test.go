package report

import "github.com/stampede-load/stampede/internal/result"

// Compare builds the comparison of rs against rs[0] with the default
// options. labels name the runs (the classic load-test report's V1,
// V2 …); nil means "run 1", "run 2" ….
func Compare(rs []*result.Result, labels []string) (*Comparison, error) {
	return CompareWith(rs, labels, Options{})
}
