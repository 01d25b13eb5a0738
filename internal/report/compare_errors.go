package report

import (
	"fmt"
	"sort"
)

// errorChange is a failure message present in one run of a comparison and
// absent from the baseline (appeared), or the other way round (vanished).
type errorChange struct {
	Run      string // the compared run's label
	Appeared bool
	Row      errorRow
}

// maxErrorChanges bounds the changes listed per run and direction.
const maxErrorChanges = 10

// errorChanges finds, for every run after the baseline, the messages it
// has that the baseline has not and those it lost; "other messages" lines
// are not messages and are left out. Most frequent first.
func (c *Comparison) errorChanges() []errorChange {
	type key struct{ step, class, msg string }
	keys := func(rows []errorRow) map[key]errorRow {
		m := map[key]errorRow{}
		for _, e := range rows {
			if !e.Other {
				m[key{e.Step, e.Class, e.Message}] = e
			}
		}
		return m
	}
	base := keys(errorRows(c.Runs[0]))
	var out []errorChange
	for i, r := range c.Runs[1:] {
		cur := keys(errorRows(r))
		var appeared, vanished []errorRow
		for k, e := range cur {
			if _, ok := base[k]; !ok {
				appeared = append(appeared, e)
			}
		}
		for k, e := range base {
			if _, ok := cur[k]; !ok {
				vanished = append(vanished, e)
			}
		}
		for _, l := range []struct {
			rows     []errorRow
			appeared bool
		}{{appeared, true}, {vanished, false}} {
			sort.Slice(l.rows, func(a, b int) bool {
				if l.rows[a].Count != l.rows[b].Count {
					return l.rows[a].Count > l.rows[b].Count
				}
				return l.rows[a].Message < l.rows[b].Message
			})
			for _, e := range l.rows[:min(len(l.rows), maxErrorChanges)] {
				out = append(out, errorChange{Run: c.Labels[i+1], Appeared: l.appeared, Row: e})
			}
		}
	}
	return out
}

// errorChangeLines says each change in a line: "run 2: appeared: vote
// client_error ×1000: 409 Conflict: …".
func (c *Comparison) errorChangeLines(width int) []string {
	var out []string
	for _, ch := range c.errorChanges() {
		what := "vanished"
		if ch.Appeared {
			what = "appeared"
		}
		msg := ch.Row.Message
		if width > 0 {
			msg = shorten(msg, width)
		}
		out = append(out, fmt.Sprintf("%s: %s: %s %s ×%d: %s", ch.Run, what, ch.Row.Step, ch.Row.Class, ch.Row.Count, msg))
	}
	return out
}
