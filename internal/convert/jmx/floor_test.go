package jmx

import "testing"

func TestFloorPlan(t *testing.T) {
	out, _ := convertFile(t, "floor.jmx")
	t.Log(out)
}
