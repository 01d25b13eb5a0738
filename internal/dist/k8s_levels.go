package dist

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// LevelRun makes a Job run one level of gates or a sweep: each pod runs
// `stampede sweep PLAN --VARY V --segment i/N --start-at T`, the form a
// local --workers process runs, and prints its level result to its log.
// The coordinator creates one such Job per level, in order, each once the
// level before it was merged and judged.
type LevelRun struct {
	Vary       string
	Value      float64
	Ramp, Hold time.Duration
	// Lasts is the longest the level's run may take in a pod: its ramp,
	// the overrun it may take to come into place, and its hold. The Job's
	// deadline counts it in place of the plan's load.
	Lasts time.Duration
	// IDsAfter ("VU,ITER") numbers the level's users after the levels
	// before it (sweep --ids-after); empty at the first level.
	IDsAfter string
	// Seed, when set, is every level's pods' (STAMPEDE_SEED), as `run
	// --workers` hands its workers one.
	Seed *uint64
}

// SeedEnv hands a coordinator's seed to its segments.
const SeedEnv = "STAMPEDE_SEED"

// levelEnv is the seed handed to a level's pods.
func (k K8s) levelEnv() []corev1.EnvVar {
	if k.Level == nil || k.Level.Seed == nil {
		return nil
	}
	return []corev1.EnvVar{{Name: SeedEnv, Value: strconv.FormatUint(*k.Level.Seed, 10)}}
}

// segmentArgs is what each pod runs: the plan's segment, or with Level
// set, the level's segment.
func (k K8s) segmentArgs() []string {
	planPath := PlanMount + "/" + filepath.Base(k.PlanFile)
	args := []string{"run", planPath}
	if l := k.Level; l != nil {
		args = []string{"sweep", planPath, "--" + l.Vary, strconv.FormatFloat(l.Value, 'f', -1, 64),
			"--ramp", l.Ramp.String(), "--hold", l.Hold.String()}
		if l.IDsAfter != "" {
			args = append(args, "--ids-after", l.IDsAfter)
		}
	}
	args = append(args,
		"--segment", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", k.Segments),
		"--start-at", k.StartAt.UTC().Format(time.RFC3339Nano),
		"--start-grace", k.StartGrace.String(),
		"--emit-result", "-q", "-o", "/tmp/result.json",
	)
	return append(args, k.StreamArgs...)
}

// loadLasts is how long the pods' load may run: the plan's, or the
// level's.
func (k K8s) loadLasts(p *plan.Plan) time.Duration {
	if k.Level != nil {
		return k.Level.Lasts
	}
	return p.Load.Duration()
}

// levelAnnotations name the level a Job runs, for kubectl.
func (k K8s) levelAnnotations(a map[string]string) map[string]string {
	if l := k.Level; l != nil {
		a["stampede.io/level"] = l.Vary + " " + strconv.FormatFloat(l.Value, 'f', -1, 64)
	}
	return a
}

// segmentOf is the segment a pod's result is: a run's own, or for a
// level's (a sweep of one level, whose top figures are the levels
// combined), its level's.
func segmentOf(res *result.Result) result.Segment {
	if s := res.Run.Segment; s.Count > 1 || len(res.Levels) != 1 || res.Levels[0].Result == nil {
		return s
	}
	return res.Levels[0].Result.Run.Segment
}
