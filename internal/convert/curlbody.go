package convert

import (
	"bytes"

	"github.com/stampede-load/stampede/internal/plan"
)

// build writes the plan of the command's one request, loaded as a run
// would load it (loadChecked). A JSON body becomes json: in the plan,
// which sends it compact, as json: writes it; curl sends the bytes as
// typed. Where the two differ ({"a": 1.0}, a body that is signed) the
// body is kept as text instead, sent byte for byte.
func (c *curlCmd) build(args []string, o Options) ([]byte, Summary, error) {
	out, s, p, err := c.buildOnce(args, o)
	if err == nil && !c.x.rawBody && !c.x.isForm && !c.x.isMultipart {
		if sent, ok := sentBody(p); ok && !bytes.Equal(sent, c.x.body) {
			c.x.rawBody = true
			out, s, _, err = c.buildOnce(args, o)
		}
	}
	return out, s, err
}

// buildOnce writes the plan and loads it.
func (c *curlCmd) buildOnce(args []string, o Options) ([]byte, Summary, *plan.Plan, error) {
	out, s, err := build([]*exchange{c.x}, o)
	s.Notes = append(s.Notes, c.notes...)
	out = c.restoreEnvRefs(out, &s)
	var p *plan.Plan
	if err == nil {
		p, err = loadChecked(out, args, o.AllowFiles)
	}
	return out, s, p, err
}

// sentBody is the body the plan's one request sends, when it has one
// that is the same for every user.
func sentBody(p *plan.Plan) ([]byte, bool) {
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			switch {
			case st.Kind != plan.StepRequest:
			case st.StaticBody != nil:
				return st.StaticBody, true
			case st.Body != nil && st.Body.Static():
				return []byte(st.Body.String(nil)), true
			default:
				return nil, false
			}
		}
	}
	return nil, false
}
