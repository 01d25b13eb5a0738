package levels

import "github.com/stampede-load/stampede/internal/result"

// testJudge is the verdict this package's own tests draw levels with,
// set by them; the session always gives Options.Judge.
var testJudge func(result.Level) bool

// judge is the level's verdict by Options.Judge; a level no one judges
// does not pass.
func (o Options) judge(lv result.Level) bool {
	switch {
	case o.Judge != nil:
		return o.Judge(lv)
	case testJudge != nil:
		return testJudge(lv)
	}
	return false
}
