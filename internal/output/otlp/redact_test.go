package otlp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEchoedSecretsRedacted: a receiver that echoes the request's headers
// in its refusal must not put the token or a password into the warning.
func TestEchoedSecretsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		for name, vs := range r.Header {
			fmt.Fprintf(&b, "%s=%s;", name, strings.Join(vs, ","))
		}
		http.Error(w, b.String(), http.StatusBadRequest)
	}))
	defer srv.Close()
	s, err := New("otlp", srv.URL, Options{Header: http.Header{"Authorization": {"Bearer tok-s3cret"}, "X-Api-Key": {"key-s3cret"}}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Close(snapshot(t, 1))
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("close: %v, want the refusal", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the warning shows a secret: %v", err)
	}
}
