package docs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/plan"
)

const schemaFile = "reference/stampede.schema.json"

// The committed schema is what `stampede schema` prints (-update rewrites it).
func TestReferenceSchema(t *testing.T) {
	want := plan.Schema()
	have, err := os.ReadFile(schemaFile)
	if err == nil && bytes.Equal(have, want) {
		return
	}
	if *update {
		if err := os.WriteFile(schemaFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("%s is out of date with the code (go test ./docs/ -run %s -update rewrites it); first difference:\n%s",
		schemaFile, t.Name(), firstDifference(string(have), string(want)))
}

// schemaSections finds the schema's sections by the $comment each one
// carries ("section PATH", PATH as the plan-keys reference names it) and
// returns each one's properties: key to its schema.
func schemaSections(t *testing.T) map[string]map[string]any {
	t.Helper()
	var doc any
	if err := json.Unmarshal(plan.Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if c, ok := x["$comment"].(string); ok && strings.HasPrefix(c, "section ") {
				if props, ok := x["properties"].(map[string]any); ok {
					out[strings.TrimPrefix(c, "section ")] = props
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	return out
}

// Every key the parser accepts, section by section (asked of the parser
// itself, as the plan-keys reference is), is in the schema, and the schema
// has no key the parser refuses.
func TestSchemaHasEveryParserKey(t *testing.T) {
	sections := schemaSections(t)
	for _, pr := range keyProbes {
		parser := sectionKeys(t, pr)
		props, ok := sections[pr.path]
		if !ok {
			t.Errorf("the schema has no section %s (the parser accepts %s)", pr.path, strings.Join(parser, ", "))
			continue
		}
		for _, k := range parser {
			if _, ok := props[k]; !ok {
				t.Errorf("%s: the parser accepts %q, the schema does not have it: add it in internal/plan/schema*.go", pr.path, k)
			}
		}
		for k := range props {
			if !slices.Contains(parser, k) {
				t.Errorf("%s: the schema has %q, which the parser refuses", pr.path, k)
			}
		}
	}
	for path := range sections {
		if !slices.ContainsFunc(keyProbes, func(pr keyProbe) bool { return pr.path == path }) {
			t.Errorf("the schema's section %s is not probed in keyProbes", path)
		}
	}
}

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(plan.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(plan.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(plan.SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validatePlan reads a plan's YAML as an editor's YAML extension does and
// validates it against the schema.
func validatePlan(s *jsonschema.Schema, src []byte) error {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

func TestSchemaValidatesExamplesAndGuides(t *testing.T) {
	s := compiledSchema(t)
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range examples {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(src, []byte("# yaml-language-server: $schema=../docs/"+schemaFile+"\n")) {
			t.Errorf("%s: the first line is not the schema modeline", file)
		}
		if err := validatePlan(s, src); err != nil {
			t.Errorf("%s does not validate against the schema:\n%v", file, err)
		}
	}
	guides, _ := filepath.Glob("guides/*.md")
	plans := 0
	for _, file := range guides {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range strings.Split(string(b), "```yaml\n")[1:] {
			src, _, _ := strings.Cut(block, "```")
			if !strings.HasPrefix(src, "name:") {
				continue
			}
			plans++
			if err := validatePlan(s, []byte(src)); err != nil {
				t.Errorf("%s: plan %d does not validate against the schema:\n%v", file, i+1, err)
			}
		}
	}
	if len(examples) < 10 || plans < 2 {
		t.Fatalf("found %d examples and %d guide plans", len(examples), plans)
	}
	// The parser's own good plans, which use every kind of section.
	good, _ := filepath.Glob("../internal/plan/testdata/good/*.yaml")
	for _, file := range good {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := validatePlan(s, src); err != nil {
			t.Errorf("%s does not validate against the schema:\n%v", file, err)
		}
	}
	if len(good) < 5 {
		t.Fatalf("found %d plans in the parser's testdata/good", len(good))
	}
}

// Plans the parser refuses for an unknown key or a value of the wrong type
// are refused by the schema too, so an editor marks them before a run.
func TestSchemaRejectsWhatTheParserRejects(t *testing.T) {
	s := compiledSchema(t)
	good := stepsPlan("      - get: /\n")
	bad := map[string]string{
		"unknown top key":          good + "zzqx: 1\n",
		"unknown step key":         stepsPlan("      - {get: /, hedaers: {a: b}}\n"),
		"two methods":              stepsPlan("      - {get: /, post: /}\n"),
		"step without a method":    stepsPlan("      - {name: x}\n"),
		"timeout not a duration":   stepsPlan("      - {get: /, timeout: 30}\n"),
		"users a list":             probeHead + "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, users: [1]}]\n",
		"scenarios a list":         probeHead + "scenarios: [a]\nload:\n  stages: [{duration: 1s, users: 1}]\n",
		"bad connection enum":      good + "http: {connection: sometimes}\n",
		"insecure not a boolean":   good + "tls: {insecure: maybe}\n",
		"no load":                  probeHead + "scenarios:\n  s: {steps: [{get: /}]}\n",
		"unknown nested step key":  stepsPlan("      - repeat: 2\n        steps: [{get: /, zzqx: 1}]\n"),
		"status not a code":        stepsPlan("      - {get: /, expect: {status: ok}}\n"),
		"unknown websocket key":    connPlan("    websocket: {url: ws://127.0.0.1:1/, steps: [{hold: 1s}], zzqx: 1}\n"),
		"bad think":                stepsPlan("      - get: /\n      - think: soon\n"),
		"monitor with no kind key": good + "monitors:\n  - {name: m}\n",
		// Values of the right YAML type the parser still refuses.
		"pace as a range":           stepsPlan("      - get: /\n") + "  pace: 1s..2s\n",
		"rate without a unit":       probeHead + "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, rate: 100}]\n",
		"rate ramp without a unit":  probeHead + "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, rate: 0 -> 100}]\n",
		"negative seed":             good + "seed: -1\n",
		"fractional weight":         probeHead + "scenarios:\n  s: {weight: 0.5, steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, users: 1}]\n",
		"zero choose weight":        stepsPlan("      - get: /\n      - choose: [{weight: 0, steps: [{get: /}]}]\n"),
		"a list as a var":           good + "vars: {a: [1, 2]}\n",
		"a mapping as a var":        good + "vars: {a: {b: 1}}\n",
		"a list in expect json":     stepsPlan("      - {get: /, expect: {json: {a: [1]}}}\n"),
		"a target for host monitor": good + "monitors: [{host: true}]\n",
	}
	if err := validatePlan(s, []byte(good)); err != nil {
		t.Fatalf("the good plan does not validate: %v", err)
	}
	for name, src := range bad {
		if _, err := plan.Parse("bad.yaml", []byte(src), func(string) (string, bool) { return "", false }); err == nil {
			t.Errorf("%s: the parser accepts it; the case is wrong", name)
		}
		if err := validatePlan(s, []byte(src)); err == nil {
			t.Errorf("%s: the parser refuses it, the schema accepts it", name)
		}
	}
}

// Plans the parser accepts are valid to the schema too, so an editor does
// not mark them: empty sections and values (the parser reads them as
// empty, as a section whose entries are commented out is), and a number
// where the parser reads the text.
func TestSchemaAcceptsWhatTheParserAccepts(t *testing.T) {
	s := compiledSchema(t)
	good := map[string]string{
		"empty defaults headers": stepsPlan("      - get: /\n") + "defaults:\n  headers:\n    # X-Debug: 1\n",
		"empty vars":             stepsPlan("      - get: /\n") + "vars:\n",
		"empty thresholds":       stepsPlan("      - get: /\n") + "thresholds:\n",
		"empty capture":          stepsPlan("      - get: /\n        capture:\n"),
		"empty query":            stepsPlan("      - get: /\n        query:\n"),
		"empty expect":           stepsPlan("      - get: /\n        expect:\n"),
		"empty header value":     stepsPlan("      - get: /\n        headers:\n          X-Null:\n"),
		"empty form field":       stepsPlan("      - post: /\n        form:\n          a:\n"),
		"bare host monitor":      stepsPlan("      - get: /\n") + "monitors:\n  - host:\n",
		"number as step name":    stepsPlan("      - get: /\n        name: 404\n"),
		"null var":               stepsPlan("      - get: /\n") + "vars:\n  a:\n",
		"rate ramp, one unit":    probeHead + "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, rate: 0 -> 100/s}]\n",
		"drawn pace":             stepsPlan("      - get: /\n") + "  pace: {exponential: 2s}\n",
	}
	for name, src := range good {
		if _, err := plan.Parse("good.yaml", []byte(src), func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%s: the parser refuses it; the case is wrong: %v", name, err)
		}
		if err := validatePlan(s, []byte(src)); err != nil {
			t.Errorf("%s: the parser accepts it, the schema refuses it:\n%v", name, err)
		}
	}
}
