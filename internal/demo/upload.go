package demo

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// UploadPath takes a POST or PUT of any body and answers with what it
// received, so a plan can check its uploads arrived intact: the protocol
// (HTTP/1.1, or HTTP/2.0 over h2c), the encoding, the decoded size and
// SHA-256, and for multipart bodies each field's value and each file's
// name, type, size and SHA-256. A gzip body (Content-Encoding: gzip) is
// decompressed first; one that does not decompress is a 400.
const UploadPath = "/upload"

// maxUpload bounds what one upload may decode to, so a gzip bomb costs
// the demo a 413 and nothing more.
const maxUpload = 64 << 20

type uploadFile struct {
	Field       string `json:"field"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
}

type uploadReport struct {
	Proto       string            `json:"proto"`
	Encoding    string            `json:"encoding"`
	ContentType string            `json:"content_type"`
	Bytes       int64             `json:"bytes"`
	SHA256      string            `json:"sha256"`
	Fields      map[string]string `json:"fields,omitempty"`
	Files       []uploadFile      `json:"files,omitempty"`
}

var (
	errUploadMethod   = []byte(`{"error":"method not allowed: POST or PUT an upload"}` + "\n")
	errUploadEncoding = []byte(`{"error":"Content-Encoding must be gzip or absent"}` + "\n")
	errUploadTooBig   = []byte(`{"error":"upload larger than 64 MiB"}` + "\n")
)

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	s.total.Add(1)
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		s.reply(w, http.StatusMethodNotAllowed, errUploadMethod)
		return
	}
	rep := uploadReport{Proto: r.Proto, ContentType: r.Header.Get("Content-Type"), Encoding: r.Header.Get("Content-Encoding")}
	var body io.Reader = r.Body
	switch strings.ToLower(rep.Encoding) {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			s.uploadFailed(w, err)
			return
		}
		defer zr.Close()
		body = zr
	default:
		s.reply(w, http.StatusUnsupportedMediaType, errUploadEncoding)
		return
	}
	// The whole decoded body is hashed as it is read, and a multipart body
	// is parsed from the same stream.
	h := sha256.New()
	lim := &io.LimitedReader{R: body, N: maxUpload + 1}
	tee := io.TeeReader(lim, h)
	mt, params, _ := mime.ParseMediaType(rep.ContentType)
	if mt == "multipart/form-data" && params["boundary"] != "" {
		if err := rep.parts(tee, params["boundary"]); err != nil {
			s.uploadFailed(w, err)
			return
		}
	}
	if _, err := io.Copy(io.Discard, tee); err != nil { // what parts did not read
		s.uploadFailed(w, err)
		return
	}
	if lim.N <= 0 {
		s.reply(w, http.StatusRequestEntityTooLarge, errUploadTooBig)
		return
	}
	rep.Bytes = maxUpload + 1 - lim.N
	rep.SHA256 = hex.EncodeToString(h.Sum(nil))
	b, _ := json.Marshal(rep)
	s.reply(w, http.StatusOK, append(b, '\n'))
}

// parts reads a multipart body: fields by value, files by size and hash.
func (rep *uploadReport) parts(body io.Reader, boundary string) error {
	mr := multipart.NewReader(body, boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if p.FileName() == "" {
			v, err := io.ReadAll(io.LimitReader(p, 1<<20))
			if err != nil {
				return err
			}
			if rep.Fields == nil {
				rep.Fields = map[string]string{}
			}
			rep.Fields[p.FormName()] = string(v)
			continue
		}
		h := sha256.New()
		n, err := io.Copy(h, p)
		if err != nil {
			return err
		}
		rep.Files = append(rep.Files, uploadFile{Field: p.FormName(), Filename: p.FileName(),
			ContentType: p.Header.Get("Content-Type"), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
}

func (s *Server) uploadFailed(w http.ResponseWriter, err error) {
	b, _ := json.Marshal(map[string]string{"error": "bad upload: " + err.Error()})
	s.reply(w, http.StatusBadRequest, append(b, '\n'))
}

// protocols has the demo answer HTTP/1.1 and, on the same port, HTTP/2
// with prior knowledge (h2c), which the server tells apart by the HTTP/2
// preface, so plans with http: {version: h2c} can run against it.
func protocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}
