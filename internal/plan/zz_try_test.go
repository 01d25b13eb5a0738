package plan

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTry(t *testing.T) {
	fs, _ := filepath.Glob("testdata/good/*.yaml")
	for _, f := range fs {
		src, _ := os.ReadFile(f)
		p, err := Parse(f, src, func(k string) (string, bool) {
			if k == "API_TOKEN" {
				return "s3cret", true
			}
			return "", false
		})
		t.Logf("%s: err=%v", f, err)
		if p != nil {
			for _, s := range p.Scenarios {
				for _, st := range s.Steps {
					t.Logf("  %s %+v", s.Name, *st)
					if st.URL != nil {
						t.Logf("    url=%s body=%s", st.URL.String(nil), st.Body.String(nil))
					}
					for _, h := range st.Headers {
						t.Logf("    h %s: %s", h.Name, h.Value.String(nil))
					}
				}
			}
			t.Logf("  load %+v", p.Load)
		}
	}
}
