package demo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func authDo(t *testing.T, base, method, path, token, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func authLogin(t *testing.T, base, query, user string) string {
	t.Helper()
	code, body := authDo(t, base, "POST", "/auth/login"+query, "", `{"user":"`+user+`"}`)
	var out struct{ Token string }
	if code != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Token == "" {
		t.Fatalf("login: %d %s", code, body)
	}
	return out.Token
}

// The first token of a user expires after ?uses requests; the token of a
// later login does not; ?ttl expires tokens by time.
func TestAuthTokensExpire(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	tok := authLogin(t, srv.URL, "?uses=2", "ann")
	for i, want := range []int{200, 200, 401, 401} {
		if code, body := authDo(t, srv.URL, "GET", "/auth/items", tok, ""); code != want {
			t.Fatalf("request %d with the first token: %d %s, want %d", i, code, body, want)
		}
	}
	tok2 := authLogin(t, srv.URL, "?uses=2", "ann")
	for i := 0; i < 5; i++ {
		if code, _ := authDo(t, srv.URL, "GET", "/auth/items/a1", tok2, ""); code != 200 {
			t.Fatalf("request %d with the renewed token: %d", i, code)
		}
	}
	short := authLogin(t, srv.URL, "?ttl=1ms", "bob")
	time.Sleep(5 * time.Millisecond)
	if code, _ := authDo(t, srv.URL, "GET", "/auth/items", short, ""); code != 401 {
		t.Fatalf("expired ttl token: %d, want 401", code)
	}
	if code, _ := authDo(t, srv.URL, "GET", "/auth/items", "", ""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	st := s.AuthStatsOf()
	if st.Logins["ann"] != 2 || st.Logins["bob"] != 1 || st.Unauthorized != 4 ||
		st.Requests["GET /auth/items"] != 2 || st.Requests["GET /auth/items/{id}"] != 5 {
		t.Fatalf("stats %+v", st)
	}
}

// /auth/signed accepts the HMAC-SHA256 of the body with AuthSigningKey only.
func TestAuthSigned(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	body := `{"order":1}`
	m := hmac.New(sha256.New, []byte(AuthSigningKey))
	m.Write([]byte(body))
	good := hex.EncodeToString(m.Sum(nil))
	if code, _ := authDo(t, srv.URL, "POST", "/auth/signed", "", body, "X-Signature", good); code != 200 {
		t.Fatalf("good signature: %d", code)
	}
	if code, _ := authDo(t, srv.URL, "POST", "/auth/signed", "", body+" ", "X-Signature", good); code != 403 {
		t.Fatalf("signature of another body: %d, want 403", code)
	}
	if st := s.AuthStatsOf(); st.SignedOK != 1 || st.SignedBad != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Fixtures are created and deleted once each.
func TestAuthFixtures(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := authDo(t, srv.URL, "POST", "/auth/fixtures", "", "")
	if code != 201 || body != "{\"id\":\"f1\"}\n" {
		t.Fatalf("create: %d %q", code, body)
	}
	if code, _ := authDo(t, srv.URL, "DELETE", "/auth/fixtures/f1", "", ""); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := authDo(t, srv.URL, "DELETE", "/auth/fixtures/f1", "", ""); code != 404 {
		t.Fatalf("second delete: %d, want 404", code)
	}
	if st := s.AuthStatsOf(); st.Created != 1 || st.Deleted != 1 || st.Fixtures != 0 {
		t.Fatalf("stats %+v", st)
	}
}
