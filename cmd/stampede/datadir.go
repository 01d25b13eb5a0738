package main

import (
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/session"
)

// loadPlan loads the plan as the run's flags say: its data from --data-dir,
// and for one segment only the segment's share of each unique source, so a
// pod of an N-segment run holds 1/N of a large file (plan.LoadOptions).
// Every check of a whole run is made (file present and regular, columns,
// rows), on the segment's share.
func (d *distFlags) loadPlan(path string) (*plan.Plan, error) {
	s, err := d.seg()
	if err != nil {
		return nil, err
	}
	o := plan.LoadOptions{DataDir: d.dataDir}
	if !s.IsWhole() {
		n := s.Norm()
		o.Index, o.Count = n.Index, n.Count
	}
	return session.Load(path, withAllowedFiles(o))
}
