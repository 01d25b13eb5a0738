package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stampede-load/stampede/internal/session"
)

// `stampede schema` prints the plan schema as one JSON document.
func TestSchemaCommandPrintsJSONSchema(t *testing.T) {
	root := newRoot(session.Process{})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"schema"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("schema output is not JSON: %v", err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["properties"] == nil {
		t.Fatalf("schema output lacks $schema or properties: %.200s", out.String())
	}
}
