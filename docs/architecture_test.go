package docs

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/stampede-load/stampede/"

// goPackage is what `go list` says of one package of the module.
type goPackage struct {
	ImportPath   string
	Doc          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// What packages without a package comment (test-only ones) do.
var undocumentedPackages = map[string]string{
	"docs":         "tests that keep these docs true to the code: links, this table, the generated reference",
	"e2e":          "end-to-end tests: the real binary against real loopback servers",
	"e2e/conn":     "end-to-end tests of WebSocket and SignalR scenarios",
	"e2e/dist":     "end-to-end tests of --workers, --segment and merged results",
	"e2e/levels":   "end-to-end tests of gates, sweep and capacity",
	"e2e/monitors": "end-to-end tests of server monitors (PostgreSQL, Redis, host)",
	"e2e/report":   "end-to-end tests of the reports, in Chromium",
	"bench/sighub": "a lean SignalR hub for the connection-scale benchmarks",
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Doc,GoFiles,Imports,TestImports,XTestImports,Error", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Skipf("package %s does not load right now (%s): the table cannot be checked", p.ImportPath, p.Error.Err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// internalImports are the module's packages p imports; a package made only
// of tests is described by what its tests import.
func (p goPackage) internalImports() []string {
	imports := p.Imports
	if len(p.GoFiles) == 0 {
		imports = append(append([]string{}, p.TestImports...), p.XTestImports...)
	}
	seen := map[string]bool{}
	var out []string
	for _, imp := range imports {
		if rel, ok := strings.CutPrefix(imp, module); ok && rel != p.ImportPath && !seen[rel] {
			seen[rel] = true
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out
}

func (p goPackage) does() string {
	doc := p.Doc
	for _, prefix := range []string{"Package ", "Command "} {
		if rest, ok := strings.CutPrefix(doc, prefix); ok {
			if _, after, ok := strings.Cut(rest, " "); ok {
				doc = after
			}
		}
	}
	if doc == "" {
		doc = undocumentedPackages[p.ImportPath]
	}
	return strings.ReplaceAll(strings.TrimSuffix(doc, "."), "|", `\|`)
}

// packageTable is the architecture's package table: each package with
// what it does and the module's packages it imports, ordered so that every
// row imports only rows below it (deepest first).
func packageTable(t *testing.T, pkgs []goPackage) string {
	byPath := map[string]goPackage{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	depth := map[string]int{}
	var depthOf func(string, map[string]bool) int
	depthOf = func(path string, visiting map[string]bool) int {
		if d, ok := depth[path]; ok {
			return d
		}
		if visiting[path] {
			t.Fatalf("import cycle through %s", path)
		}
		visiting[path] = true
		d := 0
		for _, imp := range byPath[path].internalImports() {
			if _, known := byPath[imp]; known {
				d = max(d, depthOf(imp, visiting)+1)
			}
		}
		depth[path] = d
		return d
	}
	for _, p := range pkgs {
		depthOf(p.ImportPath, map[string]bool{})
	}
	sort.Slice(pkgs, func(i, j int) bool {
		a, b := pkgs[i].ImportPath, pkgs[j].ImportPath
		if depth[a] != depth[b] {
			return depth[a] > depth[b]
		}
		return a < b
	})
	var b strings.Builder
	b.WriteString("| Package | Layer | Does | Imports (this module) |\n|---|---|---|---|\n")
	for _, p := range pkgs {
		does := p.does()
		if does == "" {
			t.Errorf("package %s has no package comment: write one (or name it in undocumentedPackages)", p.ImportPath)
		}
		imports := "—"
		if imps := p.internalImports(); len(imps) > 0 {
			imports = strings.Join(imps, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", p.ImportPath, depth[p.ImportPath], does, imports)
	}
	return b.String()
}

func TestReferenceArchitecturePackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := listPackages(t)
	if len(pkgs) < 30 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	checkGenerated(t, "architecture.md", "packages", packageTable(t, pkgs))
}
