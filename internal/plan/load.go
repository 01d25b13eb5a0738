package plan

import (
	"time"

	"github.com/stampede-load/stampede/internal/profile"
)

// Model is the load model (profile's, so what draws or splits a profile
// needs no plan).
type Model = profile.Model

// The load models.
const (
	Closed = profile.Closed
	Open   = profile.Open
)

// Stage is one segment of the load profile. In the closed model From and To
// are user counts; in the open model they are arrivals per second. A stage
// without a ramp has From == To. It is the profile's own type, so the load
// maths (package profile) takes a plan's stages as they are; where the
// first stage sits in the file is kept on the plan (stagesPos).
type Stage = profile.Stage

// Load is the load profile of a run.
type Load struct {
	Model  Model
	Stages []Stage
	// Pace, in the closed model, makes each user start an iteration every
	// Pace (the first request then counts from the scheduled start).
	Pace time.Duration
	// PaceDist, when set, draws each interval between a user's iteration
	// starts from a distribution ({exponential: 2s} makes each user's
	// starts a Poisson process); Pace is then its mean.
	PaceDist *ThinkDist
	// MaxInFlight bounds concurrent iterations in the open model; an arrival
	// that finds every slot busy is counted as dropped.
	MaxInFlight int
	// Grace is how long in-flight requests may finish after the last stage;
	// whatever is still running then is counted as interrupted.
	Grace time.Duration
}

// Duration is the total length of all stages.
func (l Load) Duration() time.Duration { return profile.Duration(l.Stages) }
