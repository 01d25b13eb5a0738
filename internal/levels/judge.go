package levels

import "github.com/stampede-load/stampede/internal/result"

// judge is the level's verdict by Options.Judge; a level no one judges
// does not pass.
func (o Options) judge(lv result.Level) bool {
	if o.Judge == nil {
		return false
	}
	return o.Judge(lv)
}
