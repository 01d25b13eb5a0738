package gate

import (
	"strings"
	"testing"
)

// The redirect and proxy classes (issue 30) each get their own hint, not
// the catch-all.
func TestClassHintRedirectsAndProxy(t *testing.T) {
	for class, want := range map[string]string{"redirects": "http.redirects", "proxy": "CONNECT"} {
		if h := classHint(class); !strings.Contains(h, want) {
			t.Errorf("%s: %q", class, h)
		}
	}
}
