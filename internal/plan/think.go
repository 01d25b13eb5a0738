package plan

import (
	"math"
	"time"

	"gopkg.in/yaml.v3"
)

// ThinkKind names a think step's random distribution.
type ThinkKind uint8

const (
	// ThinkExponential draws with the given mean. Think times drawn this
	// way make one user's arrivals a Poisson process: memoryless, as
	// independent people acting on their own are, rather than a metronome.
	ThinkExponential ThinkKind = iota + 1
	// ThinkNormal draws from a normal distribution of the given mean and
	// standard deviation; draws below zero count as zero.
	ThinkNormal
	// ThinkLogNormal draws from the log-normal distribution whose own mean
	// and standard deviation (as durations, not of the logarithm) are the
	// given ones: skewed right and never negative, as human reading times
	// are measured to be.
	ThinkLogNormal
)

func (k ThinkKind) String() string {
	return [...]string{"", "exponential", "normal", "lognormal"}[k]
}

// ThinkDist is a think step's distribution. Mean and SD are the durations
// the plan wrote; for an exponential SD equals Mean.
type ThinkDist struct {
	Kind ThinkKind
	Mean time.Duration
	SD   time.Duration
	// Max caps each draw (0: no cap), since an exponential or log-normal
	// tail can otherwise park a user for many times the mean.
	Max time.Duration
	// mu and sigma are the log-normal's parameters for nanoseconds,
	// worked out once at load.
	mu, sigma float64
}

// ThinkRand is what Draw needs from a user's generator; math/rand/v2's
// *Rand has both, and neither allocates.
type ThinkRand interface {
	ExpFloat64() float64
	NormFloat64() float64
}

// Draw returns one think time from r. Draws below zero (a normal's left
// tail) are zero and draws above Max are Max.
func (d *ThinkDist) Draw(r ThinkRand) time.Duration {
	var x float64 // nanoseconds
	switch d.Kind {
	case ThinkExponential:
		x = r.ExpFloat64() * float64(d.Mean)
	case ThinkNormal:
		x = float64(d.Mean) + r.NormFloat64()*float64(d.SD)
	case ThinkLogNormal:
		x = math.Exp(d.mu + d.sigma*r.NormFloat64())
	}
	if !(x > 0) { // negative, or NaN
		return 0
	}
	if d.Max > 0 && x >= float64(d.Max) {
		return d.Max
	}
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(x)
}

var thinkDistKeys = []string{"exponential", "normal", "lognormal"}

// thinkDist reads think: {exponential: MEAN} or {normal|lognormal: MEAN,
// sd: SD}, each with an optional max. The step's ThinkMin and ThinkMax are
// both set to the mean, so code that only wants the average wait (capacity
// estimates) reads it as it reads a fixed think.
func (p *parser) thinkDist(st *Step, n *yaml.Node) *Step {
	d := p.distribution(n, "think")
	if d == nil {
		return nil
	}
	st.Dist = d
	st.ThinkMin, st.ThinkMax = d.Mean, d.Mean
	return st
}

// distribution reads {exponential: MEAN} or {normal|lognormal: MEAN, sd:
// SD}, each with an optional max, for what (think, pace).
func (p *parser) distribution(n *yaml.Node, what string) *ThinkDist {
	f := p.fields(n, what+" distribution", []string{"exponential", "normal", "lognormal", "sd", "max"})
	kind := p.oneOf(f, thinkDistKeys, what, "one distribution")
	if kind == nil {
		for _, k := range thinkDistKeys {
			if !p.missing(n, k) {
				return nil // a misspelt kind, already reported with its fix
			}
		}
		p.errf(n, "%s distribution has no kind: expected {exponential: 2s}, {normal: 2s, sd: 500ms} or {lognormal: 2s, sd: 1s}", what)
		return nil
	}
	d := &ThinkDist{}
	switch kind.key {
	case "exponential":
		d.Kind = ThinkExponential
	case "normal":
		d.Kind = ThinkNormal
	case "lognormal":
		d.Kind = ThinkLogNormal
	}
	mean, good := p.duration(kind.v, kind.key+" mean", false)
	d.Mean = mean
	sd, hasSD := f["sd"]
	switch {
	case d.Kind == ThinkExponential && hasSD:
		p.errf(sd.k, "an exponential %s has no sd (its standard deviation is its mean): remove sd, or use normal or lognormal", what)
		good = false
	case d.Kind != ThinkExponential && !hasSD:
		p.errf(kind.k, "a %s %s needs sd: expected {%s: %s, sd: 500ms}", kind.key, what, kind.key, deref(kind.v).Value)
		good = false
	case hasSD:
		v, ok := p.duration(sd.v, "sd", false)
		d.SD, good = v, good && ok
	default:
		d.SD = d.Mean
	}
	if e, ok := f["max"]; ok {
		v, ok := p.duration(e.v, "max", false)
		switch {
		case !ok:
			good = false
		case good && v < d.Mean:
			p.errf(e.v, "bad max %s: below the mean %s, it would change the distribution rather than trim its tail", q(v.String()), q(d.Mean.String()))
			good = false
		default:
			d.Max = v
		}
	}
	if !good {
		return nil
	}
	if d.Kind == ThinkLogNormal {
		m, s := float64(d.Mean), float64(d.SD)
		v := math.Log1p(s * s / (m * m))
		d.sigma, d.mu = math.Sqrt(v), math.Log(m)-v/2
	}
	return d
}
