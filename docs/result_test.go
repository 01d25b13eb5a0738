package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// resultTypes reads the struct types of internal/result from its source,
// so the schema page is written from the very types the result file is
// marshalled from, with their own comments.
func resultTypes(t *testing.T) map[string]*ast.TypeSpec {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../internal/result/*.go")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]*ast.TypeSpec{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Doc == nil && len(gd.Specs) == 1 {
					ts.Doc = gd.Doc
				}
				types[ts.Name.Name] = ts
			}
		}
	}
	return types
}

type schemaWriter struct {
	types   map[string]*ast.TypeSpec
	queue   []string
	queued  map[string]bool
	missing []string
	stale   []string
}

// groupComment finds, for a field with no comment of its own, the comment
// above an earlier field of the struct that speaks of it by name
// ("PeakOpen is ...; OpenAtEnd those still open ..."), and points there.
func groupComment(st *ast.StructType, field *ast.Field) string {
	name := field.Names[0].Name
	var owner string
	for _, f := range st.Fields.List {
		if f == field {
			return owner
		}
		if f.Doc != nil && len(f.Names) > 0 && regexp.MustCompile(`\b`+name+`\b`).MatchString(f.Doc.Text()) {
			key, _ := jsonKey(f)
			owner = "see `" + key + "`"
		}
	}
	return ""
}

// typeText says in words what JSON a Go type becomes, queueing the
// package's struct types it names for their own tables.
func (w *schemaWriter) typeText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return w.typeText(e.X)
	case *ast.ArrayType:
		return "list of " + w.typeText(e.Elt)
	case *ast.MapType:
		return "object of " + w.typeText(e.Value)
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" && e.Sel.Name == "Time" {
			return "time (RFC 3339)"
		}
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "json" && e.Sel.Name == "RawMessage" {
			return "JSON"
		}
		return "`" + fmt.Sprint(e.X) + "." + e.Sel.Name + "`"
	case *ast.Ident:
		ts, ok := w.types[e.Name]
		if !ok {
			return map[string]string{"string": "string", "bool": "boolean", "float64": "number", "float32": "number"}[e.Name] + intText(e.Name)
		}
		if _, isStruct := ts.Type.(*ast.StructType); !isStruct {
			return w.typeText(ts.Type)
		}
		if !w.queued[e.Name] {
			w.queued[e.Name] = true
			w.queue = append(w.queue, e.Name)
		}
		return "[" + e.Name + "](#" + strings.ToLower(e.Name) + ")"
	}
	return fmt.Sprintf("%T", e)
}

func intText(name string) string {
	if strings.HasPrefix(name, "int") || strings.HasPrefix(name, "uint") {
		return "integer"
	}
	return ""
}

func commentText(groups ...*ast.CommentGroup) string {
	var parts []string
	for _, g := range groups {
		if g != nil {
			parts = append(parts, strings.Join(strings.Fields(g.Text()), " "))
		}
	}
	return strings.ReplaceAll(strings.Join(parts, " "), "|", `\|`)
}

// fieldRows writes one row per JSON key of a struct, embedded structs'
// keys inline, as encoding/json flattens them.
func (w *schemaWriter) fieldRows(b *strings.Builder, typeName string, st *ast.StructType) {
	for _, f := range st.Fields.List {
		key, omitempty := jsonKey(f)
		if key == "-" {
			continue
		}
		if len(f.Names) == 0 {
			if id, ok := f.Type.(*ast.Ident); ok {
				if emb, ok := w.types[id.Name].Type.(*ast.StructType); ok {
					w.fieldRows(b, typeName, emb)
					continue
				}
			}
		}
		if len(f.Names) > 0 && !f.Names[0].IsExported() {
			continue
		}
		desc := commentText(f.Doc, f.Comment)
		if desc == "" && len(f.Names) > 0 {
			desc = groupComment(st, f)
		}
		if desc == "" {
			desc = resultKeyDocs[typeName+"."+key]
		} else if _, stale := resultKeyDocs[typeName+"."+key]; stale {
			w.stale = append(w.stale, typeName+"."+key)
		}
		if desc == "" {
			w.missing = append(w.missing, typeName+"."+key)
		}
		if omitempty {
			desc = strings.TrimSpace(desc + " *(left out when empty)*")
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", key, w.typeText(f.Type), desc)
	}
}

func jsonKey(f *ast.Field) (string, bool) {
	name := ""
	if len(f.Names) > 0 {
		name = f.Names[0].Name
	}
	if f.Tag == nil {
		return name, false
	}
	tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
	key, opts, _ := strings.Cut(tag, ",")
	if key == "" {
		key = name
	}
	return key, strings.Contains(opts, "omitempty")
}

func resultSchema(t *testing.T) (string, []string, []string) {
	w := &schemaWriter{types: resultTypes(t), queued: map[string]bool{"Result": true}, queue: []string{"Result"}}
	var b strings.Builder
	for len(w.queue) > 0 {
		name := w.queue[0]
		w.queue = w.queue[1:]
		ts := w.types[name]
		fmt.Fprintf(&b, "\n### %s\n\n", name)
		if doc := commentText(ts.Doc); doc != "" {
			b.WriteString(doc + "\n\n")
		}
		b.WriteString("| key | type | what it holds |\n|---|---|---|\n")
		w.fieldRows(&b, name, ts.Type.(*ast.StructType))
	}
	sort.Strings(w.missing)
	for key := range resultKeyDocs {
		typ, _, _ := strings.Cut(key, ".")
		if !w.queued[typ] || !strings.Contains(b.String(), "### "+typ+"\n") {
			w.stale = append(w.stale, key)
		}
	}
	return b.String(), w.missing, w.stale
}

func TestReferenceResultSchema(t *testing.T) {
	schema, missing, stale := resultSchema(t)
	if !strings.Contains(schema, "| `schema` |") || !strings.Contains(schema, "### Latency") {
		t.Fatalf("the schema read from internal/result lacks the top-level keys:\n%s", schema)
	}
	checkGenerated(t, "reference/result.md", "result schema", schema)
	for _, key := range missing {
		t.Errorf("result key %s has no comment in internal/result and no line in resultKeyDocs", key)
	}
	for _, key := range stale {
		t.Errorf("resultKeyDocs has %s, which internal/result now documents itself or no longer has", key)
	}
}
