// Package plan reads a YAML test plan — target, scenarios and their steps,
// load profile, data sources, tenants, persistent connections, thresholds,
// gates and monitors — into a checked, compiled Plan, and reports every
// mistake it finds at once with its file:line:col and, where a key is
// misspelt, the key most likely meant.
//
// Everything the engine needs at run time is resolved here (templates
// compiled, URLs joined, ${ENV} expanded), so nothing is parsed on the hot
// path. The package sits low in the import graph — it imports only gate,
// to check thresholds at load, and leaf packages — so the engine, the
// reports and the command line can all depend on it.
package plan
