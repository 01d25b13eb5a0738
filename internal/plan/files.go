package plan

import (
	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/localfile"
)

// confined reports whether the file a plan names (name, resolved to path)
// may be read, reporting the problem at n if not: a plan is code, and one
// from an untrusted change must not send /proc/self/environ or a file
// far from it to its target (package localfile).
func (p *parser) confined(n *yaml.Node, name, path string) bool {
	if _, err := localfile.Resolve(path, p.fileRoots()); err != nil {
		p.errf(n, "cannot read %s: %s", q(name), err)
		return false
	}
	return true
}

// fileRoots are the directories a plan's files may come from: the plan's,
// --data-dir's and those --allow-files names.
func (p *parser) fileRoots() []string {
	roots := []string{p.dir}
	if p.loadOpts.DataDir != "" {
		roots = append(roots, p.loadOpts.DataDir)
	}
	return append(roots, p.loadOpts.AllowFiles...)
}

// ParseWith is Parse with o: where files may be read from, as LoadFileWith.
func ParseWith(file string, src []byte, lookupEnv func(string) (string, bool), o LoadOptions) (*Plan, error) {
	return parseOpts(file, src, lookupEnv, openFile, o)
}
