package demo

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func uploadOf(t *testing.T, s *Server, method, ctype, encoding string, body []byte) (int, uploadReport) {
	t.Helper()
	req := httptest.NewRequest(method, UploadPath, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var rep uploadReport
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%s: %v", rec.Body, err)
		}
	}
	return rec.Code, rep
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestUpload: the upload route reports what it decoded, so plans can
// check their uploads: plain and gzip bodies by size and hash, multipart
// fields by value and files by name, type, size and hash.
func TestUpload(t *testing.T) {
	s := New(Options{})
	plain := []byte(`{"order": 1}`)
	code, rep := uploadOf(t, s, "PUT", "application/json", "", plain)
	if code != 200 || rep.Bytes != int64(len(plain)) || rep.SHA256 != hexSum(plain) || rep.Encoding != "" || rep.ContentType != "application/json" {
		t.Fatalf("plain: %d %+v", code, rep)
	}
	code, rep = uploadOf(t, s, "POST", "text/plain", "gzip", gz(plain))
	if code != 200 || rep.Bytes != int64(len(plain)) || rep.SHA256 != hexSum(plain) || rep.Encoding != "gzip" {
		t.Fatalf("gzip: %d %+v", code, rep)
	}

	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	w.WriteField("title", "cat")
	photo := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1000)
	fw, _ := w.CreateFormFile("photo", "cat.png")
	fw.Write(photo)
	w.Close()
	for _, enc := range []string{"", "gzip"} {
		body := mp.Bytes()
		if enc == "gzip" {
			body = gz(body)
		}
		code, rep = uploadOf(t, s, "POST", w.FormDataContentType(), enc, body)
		if code != 200 || rep.Fields["title"] != "cat" || len(rep.Files) != 1 || rep.SHA256 != hexSum(mp.Bytes()) {
			t.Fatalf("multipart %q: %d %+v", enc, code, rep)
		}
		f := rep.Files[0]
		if f.Field != "photo" || f.Filename != "cat.png" || f.Bytes != int64(len(photo)) || f.SHA256 != hexSum(photo) || f.ContentType != "application/octet-stream" {
			t.Fatalf("multipart %q file: %+v", enc, f)
		}
	}

	for _, tc := range []struct {
		method, ctype, enc string
		body               []byte
		want               int
	}{
		{"GET", "", "", nil, http.StatusMethodNotAllowed},
		{"POST", "", "gzip", []byte("not gzip"), http.StatusBadRequest},
		{"POST", "", "br", []byte("x"), http.StatusUnsupportedMediaType},
		{"POST", "multipart/form-data; boundary=zz", "", []byte("--zz\r\nbroken"), http.StatusBadRequest},
		// A gzip bomb: 64 MiB and a byte of zeros compress to about 64 KiB.
		{"POST", "", "gzip", gz(make([]byte, maxUpload+1)), http.StatusRequestEntityTooLarge},
	} {
		if code, _ := uploadOf(t, s, tc.method, tc.ctype, tc.enc, tc.body); code != tc.want {
			t.Errorf("%s %q %q: %d, want %d", tc.method, tc.ctype, tc.enc, code, tc.want)
		}
	}
}

// TestStartServesH2C: the demo's listener answers HTTP/2 with prior
// knowledge as well as HTTP/1.1.
func TestStartServesH2C(t *testing.T) {
	url, stop, err := Start(context.Background(), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var pr http.Protocols
	pr.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &pr}}
	defer c.CloseIdleConnections()
	resp, err := c.Post(url+UploadPath, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var rep uploadReport
	if err := json.Unmarshal(b, &rep); err != nil || rep.Proto != "HTTP/2.0" || rep.Bytes != 5 {
		t.Fatalf("%s (%v): want proto HTTP/2.0 and 5 bytes", b, err)
	}
}
