package plan

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
)

// SchemaID is the $id of the plan schema: where an editor that meets the
// modeline with a URL would fetch it from.
const SchemaID = "https://github.com/stampede-load/stampede/raw/main/docs/reference/stampede.schema.json"

// Schema returns the JSON Schema (draft 2020-12) of a plan, indented, for
// editors (VS Code's YAML extension completes and checks a plan with it).
// Each section's keys are the ones the parser accepts and each key's
// description is keyDocs' line; docs/schema_test.go fails when a key the
// parser accepts is missing here, or the committed schema file drifts.
func Schema() []byte {
	root := rootSchema()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic("plan: the schema does not encode: " + err.Error()) // maps of strings and slices always encode
	}
	return b.Bytes()
}

func rootSchema() obj {
	root := section("(top level)", "a stampede test plan", []prop{
		{"name", scalar()},
		{"target", str()},
		{"defaults", defaultsSchema()},
		{"tls", tlsSchema()},
		{"vars", mapOf(scalar())},
		{"data", mapOf(dataSchema())},
		{"tenants", tenantsSchema()},
		{"scenarios", scenariosSchema()},
		{"load", loadSchema()},
		{"thresholds", listOf(str())},
		{"http", httpSchema()},
		{"gates", gatesSchema()},
		{"monitors", listOf(monitorSchema())},
		{"secret_headers", listOf(str())},
		{"seed", intish()},
		{"setup", stepsSchema()},
		{"teardown", stepsSchema()},
	}, "scenarios", "load")
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "stampede plan"
	root["$defs"] = obj{"step": stepSchema()}
	return root
}

// obj is one JSON Schema node.
type obj = map[string]any

// prop is one key of a section and the schema of its value.
type prop struct {
	key    string
	schema obj
}

// envRef matches a value that holds an ${ENV} reference: the parser expands
// it before reading the value, so any type is right once it is expanded.
const envRef = `\$\{[^}]+\}`

// durationRE is what time.ParseDuration accepts, with the parser's own
// rule that only 0 may go without a unit.
const durationRE = `(0|([0-9]*\.?[0-9]+(ns|us|µs|μs|ms|s|m|h))+)`

func str() obj     { return obj{"type": "string"} }
func boolish() obj { return withEnv(obj{"type": "boolean"}) }
func anyValue() obj {
	return obj{}
}

// scalar is a single YAML value: the parser reads its text, whatever YAML
// typed it as, and an empty one (a header "X-Null:") as "".
func scalar() obj { return obj{"type": []string{"string", "number", "boolean", "null"}} }

// intish is a whole number from 0, written as one or as a string of one.
func intish() obj {
	return obj{"type": []string{"integer", "string"}, "minimum": 0, "pattern": `^\s*[0-9]+\s*$|` + envRef}
}

// atLeastOne is a whole number from 1 (a weight), at most max when max > 0.
func atLeastOne(max int) obj {
	s := obj{"type": []string{"integer", "string"}, "minimum": 1, "pattern": `^\s*0*[1-9][0-9]*\s*$|` + envRef}
	if max > 0 {
		s["maximum"] = max
	}
	return s
}

func duration() obj {
	return obj{"anyOf": []obj{{"type": "string", "pattern": `^\s*` + durationRE + `\s*$|` + envRef}, {"const": 0}}}
}

// durationOr is a duration or one of some words (off, run).
func durationOr(words ...string) obj {
	return obj{"anyOf": []obj{duration(), {"enum": words}}}
}

func enum(values ...string) obj { return withEnv(obj{"enum": values}) }

// withEnv lets s also be a string holding an ${ENV} reference.
func withEnv(s obj) obj {
	return obj{"anyOf": []obj{s, {"type": "string", "pattern": envRef}}}
}

// listOf and mapOf take null too: the parser reads an empty value (a
// section whose entries are all commented out) as an empty list or mapping.
func listOf(items obj) obj { return obj{"type": []string{"array", "null"}, "items": items} }

// oneOrList is a single value or a list of them.
func oneOrList(item obj) obj { return obj{"anyOf": []obj{item, listOf(item)}} }

func mapOf(values obj) obj {
	return obj{"type": []string{"object", "null"}, "additionalProperties": values}
}

// nonNull is s without null: a value the parser needs to hold something.
func nonNull(s obj) obj {
	var types []string
	for _, t := range s["type"].([]string) {
		if t != "null" {
			types = append(types, t)
		}
	}
	out := maps.Clone(s)
	out["type"] = types
	return out
}

func headers() obj { return mapOf(scalar()) }

// section is a mapping of a fixed set of keys: any other key is an error,
// as it is to the parser. path names the section in keyDocs.
func section(path, desc string, props []prop, required ...string) obj {
	ps := obj{}
	for _, p := range props {
		s := p.schema
		if d, ok := keyDocs[path+" "+p.key]; ok {
			s = describe(s, d)
		}
		ps[p.key] = s
	}
	// The $comment names the section as the plan-keys reference does:
	// docs/schema_test.go finds each section's keys by it.
	// Empty (null) is an empty mapping to the parser, unless it must hold
	// a key.
	s := obj{"type": []string{"object", "null"}, "properties": ps, "additionalProperties": false, "$comment": "section " + path}
	if desc != "" {
		s["description"] = desc
	}
	if len(required) > 0 {
		s["type"], s["required"] = "object", required
	}
	return s
}

var mdLink = regexp.MustCompile(`\s*\(\[[^\]]*\]\([^)]*\)\)|\[([^\]]*)\]\([^)]*\)`)

// describe gives s the description d: as plain text, its Markdown links
// dropped (editors that show plain text), and where it has links, as
// written (markdownDescription, which VS Code renders; the links are
// relative to docs/reference, where the schema file lives). The plan-keys
// reference is generated from the same texts, read back from the schema.
func describe(s obj, d string) obj {
	out := maps.Clone(s)
	plain := mdLink.ReplaceAllString(d, "$1")
	out["description"] = plain
	if plain != d {
		out["markdownDescription"] = d
	}
	return out
}
