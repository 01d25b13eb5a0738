package jmx

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/plan"
)

func (c *conv) render(scens []*scenario, load []stage) ([]byte, error) {
	doc := newNode()
	doc.add("name", str(c.literal(c.o.Name, modePlain)))
	if c.target != "" {
		// Every step names its server (a CSV column) when there is none.
		doc.add("target", str(c.target))
	}
	if c.defaultHeaders != nil {
		doc.add("defaults", mapping(str("headers"), c.defaultHeaders))
	}
	if c.lbrace {
		doc.add("vars", mapping(str("stampede_lbrace"), str("{{")))
	}
	if len(c.sources) > 0 {
		data := mapping()
		for _, ds := range c.sources {
			data.Content = append(data.Content, str(ds.name), flow(mapping(str("file"), str(ds.file), str("pick"), str(ds.pick))))
		}
		doc.add("data", data)
	}
	if len(c.setup) > 0 {
		doc.add("setup", seq(c.setup...))
	}
	sm := mapping()
	taken := map[string]bool{}
	for _, s := range scens {
		name := ident(s.name)
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s_%d", ident(s.name), n)
		}
		taken[name] = true
		if len(scens) > 1 {
			s.node.Content = append([]*yaml.Node{str("weight"), plain(formatNum(max(s.users, 1)))}, s.node.Content...)
		}
		sm.Content = append(sm.Content, str(name), s.node)
	}
	doc.add("scenarios", sm)
	if len(c.teardown) > 0 {
		doc.add("teardown", seq(c.teardown...))
	}
	stages := seq()
	for _, s := range load {
		stages.Content = append(stages.Content, stageNode(s))
	}
	doc.add("load", mapping(str("stages"), stages))
	var body bytes.Buffer
	enc := yaml.NewEncoder(&body)
	enc.SetIndent(2)
	if err := enc.Encode(doc.m); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	// A user variable read from the environment counts only where the
	// plan uses it.
	for n := range c.required {
		if !bytes.Contains(body.Bytes(), []byte("${"+n+"}")) {
			delete(c.required, n)
		}
	}
	return append([]byte(c.header()), body.Bytes()...), nil
}

// requiredText lists the variables to set, an Azure secret's with its
// name.
func (c *conv) requiredText() string {
	names := sortedKeys(c.required)
	for i, n := range names {
		if s, ok := c.secrets[n]; ok {
			names[i] = n + " (the Azure Load Testing secret " + strconv.Quote(s) + ")"
		}
	}
	return strings.Join(names, ", ")
}

// header is the plan's header comment: where it came from, the
// properties it reads, and what was not converted, element by element.
func (c *conv) header() string {
	var b strings.Builder
	src := c.o.Source
	if src == "" {
		src = "a JMeter test plan"
	}
	fmt.Fprintf(&b, "# Converted from %s by stampede convert jmx: %d of %d HTTP samplers as request steps.\n", oneLine(src), c.res.Steps, c.res.Samplers)
	b.WriteString("# Cookies are left to each user's jar. Check the load below before a real run.\n")
	if len(c.res.Env) > 0 {
		b.WriteString("# JMeter properties are environment variables (-Jname=value is NAME=value): " + strings.Join(c.res.Env, ", ") + "\n")
	}
	if len(c.required) > 0 {
		b.WriteString("# Set before running (no default): " + c.requiredText() + "\n")
	}
	if len(c.sources) > 0 {
		b.WriteString("# Data files are read relative to this plan.\n")
	}
	for _, n := range c.res.Notes {
		b.WriteString("# Note: " + oneLine(n) + "\n")
	}
	if len(c.res.Skipped) > 0 {
		b.WriteString("# Not converted:\n")
		for _, s := range c.res.Skipped {
			b.WriteString("#   " + oneLine(s) + "\n")
		}
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// validate loads the plan as `stampede run` would, its data files stood
// in for by files of their columns and one row: the plan's own structure
// is checked here, whatever state the user's files are in.
func validate(text []byte, sources []*dataSource, required map[string]bool) error {
	dir, err := os.MkdirTemp("", "stampede-jmx-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	check := text
	for i, ds := range sources {
		stand := fmt.Sprintf("data%d.csv", i)
		row := strings.Repeat(",", len(ds.columns)-1)
		if err := os.WriteFile(filepath.Join(dir, stand), []byte(strings.Join(ds.columns, ",")+"\n"+row+"x\n"), 0o600); err != nil {
			return err
		}
		check = bytes.Replace(check, []byte("{file: "+yamlText(ds.file)+","), []byte("{file: "+stand+","), 1)
	}
	name := filepath.Join(dir, "plan.yaml")
	// The variables the user must set stand in as a server's URL or
	// name, the only places the conversion writes them.
	lookup := func(n string) (string, bool) {
		switch {
		case n == "TARGET" && required[n]:
			return "http://target.invalid", true
		case required[n]:
			return "stand-in.invalid", true
		}
		return "", false
	}
	_, err = plan.ParseWith(name, check, lookup, plan.LoadOptions{})
	return err
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// yamlText is s as the encoder writes it inside a flow mapping.
func yamlText(s string) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	_ = enc.Encode(flow(mapping(str("f"), str(s))))
	out := strings.TrimSpace(buf.String())
	return strings.TrimSuffix(strings.TrimPrefix(out, "{f: "), "}")
}
