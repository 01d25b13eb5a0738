package levels

import (
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/result"
)

// judgeLevel is the verdict this package's tests give as Options.Judge:
// the session's (session.LevelPass), which this package cannot import.
func judgeLevel(l result.Level) bool {
	partial := l.Result == nil || l.Result.Run.Partial
	return gate.Judge(gate.Outcome{Incomplete: partial, Thresholds: l.SLO, LevelFailed: l.NotInPlace != ""}) == gate.Pass
}
