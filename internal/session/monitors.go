package session

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// envRefRE is a ${NAME} or ${NAME:-default} reference in a --monitor value.
var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expandMonitorEnv expands ${NAME} in a --monitor value as the plan does,
// so a password can stay in the environment.
func expandMonitorEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var missing string
	out := envRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		m := envRefRE.FindStringSubmatch(ref)
		v, ok := lookup(m[1])
		switch {
		case strings.Contains(ref, ":-") && v == "":
			return m[2]
		case !ok && missing == "":
			missing = m[1]
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("environment variable %s is not set: set it or write ${%s:-default}", missing, missing)
	}
	return out, nil
}

// monitorSpecs is the plan's monitors with the --monitor flags merged in.
// A flag naming a monitor the plan has (same kind and name) replaces its
// target and keeps its options, so a plan's postgres monitor, queries and
// all, can be pointed at another database from the command line.
func (pr Process) monitorSpecs(p *plan.Plan, flags []string) ([]collect.Spec, error) {
	specs := run.PlanMonitors(p)
	for _, f := range flags {
		kind, target, _ := strings.Cut(f, "=")
		shown := strings.TrimSpace(kind)
		if target != "" {
			shown += "=" + collect.Redact(strings.TrimSpace(target))
		}
		expanded, err := expandMonitorEnv(f, pr.lookupEnv)
		if err != nil {
			return nil, Fail(ExitUsage, fmt.Errorf("--monitor %s: %v", shown, err))
		}
		sp, err := collect.ParseSpec(expanded)
		if err != nil {
			hint := ""
			if k := strings.TrimSpace(kind); k != "" && !isKind(k) {
				if s := plan.Suggest(k, collect.Kinds); s != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", s)
				}
			}
			return nil, Fail(ExitUsage, fmt.Errorf("--monitor %s: %s%s", shown, collect.RedactText(err.Error(), sp.Target), hint))
		}
		if sp.Label() == collect.SelfSpec().Label() {
			return nil, Fail(ExitUsage, fmt.Errorf("--monitor %s: the generator's own process is always recorded as process[self]", shown))
		}
		replaced := false
		for i := range specs {
			if specs[i].Label() == sp.Label() {
				specs[i].Target, replaced = sp.Target, true
			}
		}
		if !replaced {
			specs = append(specs, sp)
		}
	}
	return specs, nil
}

func isKind(k string) bool {
	for _, c := range collect.Kinds {
		if c == k {
			return true
		}
	}
	return false
}

// monitorOptions sets up a run's monitors: the merged specs, and warnings
// on stderr for any that cannot start.
func (pr Process) monitorOptions(o *run.Options, p *plan.Plan, flags []string) error {
	specs, err := pr.monitorSpecs(p, flags)
	if err != nil {
		return err
	}
	o.Monitors = specs
	stderr := pr.Stderr
	o.MonitorWarning = func(msg string) { fmt.Fprintf(stderr, "stampede: warning: %s\n", msg) }
	return nil
}
