package promrw

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echoRefusal answers every push with a 400 whose body is the request's
// headers, as some gateways and debugging proxies do.
func echoRefusal() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		for name, vs := range r.Header {
			fmt.Fprintf(&b, "%s=%s;", name, strings.Join(vs, ","))
		}
		http.Error(w, b.String(), http.StatusBadRequest)
	}))
}

// TestEchoedSecretsRedacted: the receiver's answer is in the warning, but
// not the token or a header value it echoed (both were).
func TestEchoedSecretsRedacted(t *testing.T) {
	srv := echoRefusal()
	defer srv.Close()
	s, err := New("rw", srv.URL, Options{BearerToken: "tok-s3cret", Header: http.Header{"X-Api-Key": {"key-s3cret"}}})
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
