package main

import (
	"fmt"

	"github.com/stampede-load/stampede/internal/plan"
)

// checkFit refuses, before any load, a plan that one process of the run
// cannot hold (plan.CheckFit): past the open-files limit the run would
// fail on connections it cannot open and on its own result file.
func checkFit(p *plan.Plan, processes int) error {
	if err := p.CheckFit(processes, openFilesLimit()); err != nil {
		return fail(exitUsage, fmt.Errorf("invalid plan:\n%v", err))
	}
	return nil
}

// processes is how many processes share the run: the segment count of
// --segment i/N (each a process), else 1.
func (d *distFlags) processes() int {
	s, err := d.seg()
	if err != nil {
		return 1
	}
	return max(s.Norm().Count, 1)
}
