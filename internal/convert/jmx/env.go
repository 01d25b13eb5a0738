package jmx

import (
	"regexp"
	"strings"
)

// getenvCall is the one line of script the Azure samples run to read the
// environment: System.getenv("name").
var getenvCall = regexp.MustCompile(`^\s*System\.getenv\(\s*"([^"]+)"\s*\)\s*;?\s*$`)

// envFunction converts the functions that read the environment, or an
// Azure Load Testing secret, into ${NAME} or ${NAME:-default}:
// ${__env(name,,default)}, ${__BeanShell(System.getenv("name"))} (or
// __groovy), ${__GetSecret(name)}. A variable without a default must be
// set before the plan runs: the loader says so, naming it.
func (c *conv) envFunction(fn string, args []string) (string, bool) {
	var name, def string
	switch fn {
	case "__env":
		if len(args) == 0 {
			return "", false
		}
		name = strings.TrimSpace(args[0])
		if len(args) > 2 {
			def = strings.TrimSpace(args[2])
		}
	case "__BeanShell", "__groovy":
		if len(args) != 1 {
			return "", false
		}
		m := getenvCall.FindStringSubmatch(args[0])
		if m == nil {
			return "", false
		}
		name = m[1]
	case "__GetSecret":
		if len(args) == 0 || strings.TrimSpace(args[0]) == "" {
			return "", false
		}
		secret := strings.TrimSpace(args[0])
		name = envName(secret)
		c.secrets[name] = secret
	}
	if name == "" || strings.ContainsAny(def, "${}") {
		return "", false
	}
	if !envIdent.MatchString(name) {
		name = envName(name)
	}
	if def != "" {
		c.env[name] = def
		return "${" + name + ":-" + def + "}", true
	}
	c.required[name] = true
	return "${" + name + "}", true
}

// envIdent is a name a plan's ${NAME} reads as it is: JMeter's __env
// reads the variable of that very name, so its case is kept.
var envIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
