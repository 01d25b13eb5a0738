package jmx

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// groupStages converts one thread group of testdata/groups.jmx alone.
func groupStages(t *testing.T, name string) (string, *conv) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "groups.jmx"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := parseTree(data)
	if err != nil {
		t.Fatal(err)
	}
	c := &conv{vars: map[string]string{}, captures: map[string]string{}, columns: map[string]string{}, env: map[string]string{}, seen: map[string]bool{}}
	c.o.Duration = 60e9
	for _, tg := range root.children {
		if tg.name != name {
			continue
		}
		stages, ok := c.profile(tg)
		if !ok {
			return "", c
		}
		var lines []string
		for _, s := range stages {
			var b bytes.Buffer
			if err := yaml.NewEncoder(&b).Encode(stageNode(s)); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, strings.TrimSpace(b.String()))
		}
		return strings.Join(lines, "\n"), c
	}
	t.Fatalf("no thread group %q", name)
	return "", nil
}

func TestThreadGroupStages(t *testing.T) {
	for _, tc := range []struct{ group, want string }{
		// Delay, ramp-up, then the rest of the scheduler's duration.
		{"Browse", "{duration: 5s, users: 0}\n{duration: 10s, users: 0 -> 10}\n{duration: 50s, users: 10}"},
		// Loops without a scheduler: held for Options.Duration.
		{"Loops", "{duration: 60s, users: 3}"},
		// TargetLevel over RampUp in Steps, then Hold, in minutes.
		{"Azure", "{duration: 120s, users: 0 -> 20, steps: 4}\n{duration: 180s, users: 20}"},
		// A burst of 2, then 4 more every 30s to 10 (2 steps), held for
		// the flight time (its first 30s are the ramp's last step), then
		// 5 stopped every second.
		{"Steps", "{duration: 30s, users: 2}\n{duration: 60s, users: 2 -> 10, steps: 2}\n{duration: 30s, users: 10}\n{duration: 2s, users: 10 -> 0, steps: 2}"},
	} {
		got, _ := groupStages(t, tc.group)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.group, got, tc.want)
		}
	}
	if got, c := groupStages(t, "Ultimate"); got != "" || len(c.res.Skipped) != 1 || !strings.Contains(c.res.Skipped[0], `TestPlan/UltimateThreadGroup "Ultimate": thread group class`) {
		t.Errorf("the ultimate thread group: %q, skipped %q", got, c.res.Skipped)
	}
}

// Several thread groups: one profile, the first's shape with every group's
// users, scenarios weighted by their users; setUp as setup; a disabled
// group listed.
func TestThreadGroupsCombined(t *testing.T) {
	out, res := convertFile(t, "groups.jmx")
	mustContain(t, out,
		"setup:\n  - name: login\n    post: /setup",
		"Browse:\n    weight: 10\n", "Azure:\n    weight: 20\n", "Steps:\n    weight: 10\n", "Loops:\n    weight: 3\n",
		"- {duration: 5s, users: 0}\n    - {duration: 10s, users: 0 -> 43}\n    - {duration: 50s, users: 43}",
		`#   TestPlan/ThreadGroup "Off": disabled`,
	)
	if res.Samplers != 5 || res.Steps != 5 {
		t.Errorf("samplers %d, steps %d; want 5 and 5 (the ultimate and disabled groups' are not converted)", res.Samplers, res.Steps)
	}
}
