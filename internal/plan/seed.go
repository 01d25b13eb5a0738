package plan

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A plan's seed fixes every random draw of a run (uuid, rand_int, random
// rows, think distributions, choose), so a run can be repeated exactly.
// Without one each run draws a fresh seed and records it in its result:
// a fixed default would send the same {{ uuid }}s run after run, and a
// target that keeps what it was sent would answer the second run with
// conflicts the load did not cause.

func init() {
	topExtensions = append(topExtensions, topExtension{key: "seed", parse: (*parser).seed})
}

func (p *parser) seed(n *yaml.Node) {
	s, ok := p.text(n, "seed")
	if !ok {
		return
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		p.errf(n, "bad seed %s: expected a whole number from 0 to 18446744073709551615 (a result's \"seed\" repeats that run)", q(s))
		return
	}
	p.plan.Seed = &v
}
