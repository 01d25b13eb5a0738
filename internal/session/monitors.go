package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

const monitorFlagHelp = `server-side metrics beside the load, as KIND[=TARGET]; repeatable:
host, process=nginx, process=1234, redis=127.0.0.1:6379,
prometheus=http://127.0.0.1:9100/metrics,
'postgres=postgres://user:${PGPASSWORD}@127.0.0.1:5432/db' (single quotes
keep the password out of the shell and ps; stampede expands ${NAME}).
One of the same kind and name as a plan monitor replaces its target`

// envRefRE is a ${NAME} or ${NAME:-default} reference in a --monitor value.
var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expandMonitorEnv expands ${NAME} in a --monitor value as the plan does,
// so a password can stay in the environment.
func expandMonitorEnv(s string) (string, error) {
	var missing string
	out := envRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		m := envRefRE.FindStringSubmatch(ref)
		v, ok := os.LookupEnv(m[1])
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
func monitorSpecs(p *plan.Plan, flags []string) ([]collect.Spec, error) {
	specs := run.PlanMonitors(p)
	for _, f := range flags {
		kind, target, _ := strings.Cut(f, "=")
		shown := strings.TrimSpace(kind)
		if target != "" {
			shown += "=" + collect.Redact(strings.TrimSpace(target))
		}
		expanded, err := expandMonitorEnv(f)
		if err != nil {
			return nil, fail(exitUsage, fmt.Errorf("--monitor %s: %v", shown, err))
		}
		sp, err := collect.ParseSpec(expanded)
		if err != nil {
			hint := ""
			if k := strings.TrimSpace(kind); k != "" && !isKind(k) {
				if s := plan.Suggest(k, collect.Kinds); s != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", s)
				}
			}
			return nil, fail(exitUsage, fmt.Errorf("--monitor %s: %s%s", shown, collect.RedactText(err.Error(), sp.Target), hint))
		}
		if sp.Label() == collect.SelfSpec().Label() {
			return nil, fail(exitUsage, fmt.Errorf("--monitor %s: the generator's own process is always recorded as process[self]", shown))
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
func monitorOptions(o *run.Options, stderr io.Writer, p *plan.Plan, flags []string) error {
	specs, err := monitorSpecs(p, flags)
	if err != nil {
		return err
	}
	o.Monitors = specs
	o.MonitorWarning = func(msg string) { fmt.Fprintf(stderr, "stampede: warning: %s\n", msg) }
	return nil
}
