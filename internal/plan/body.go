package plan

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"io"
	"mime"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Request bodies beyond json, form and body: body_file and multipart
// uploads, and gzip compression of any body. Files are read once at load
// and every user sends the same bytes; a body with no template in it is
// finished (and compressed) at load too, into Step.StaticBody, which users
// send without copying it.

// maxBodyFile bounds one file read into a body, since every file is held
// in memory for the whole run.
const maxBodyFile = 256 << 20

func init() {
	bodyKeys = append(bodyKeys, "body_file", "multipart")
	requestKeys = append(requestKeys, "body_file", "multipart", "gzip")
}

// extraBody compiles the body keys of this file; request has already
// checked that the step has only one body.
func (p *parser) extraBody(st *Step, e *kv, sc *scope) {
	switch e.key {
	case "body_file":
		name, ok := p.text(e.v, "body_file")
		if !ok {
			return
		}
		data, ok := p.readBodyFile(e.v, name)
		if !ok {
			return
		}
		var b builder
		b.lit(string(data))
		st.Body = b.template(string(data))
		st.ContentType = typeByExtension(name, "")
	case "multipart":
		st.Body, st.ContentType = p.multipart(e.v, sc)
	}
}

// readBodyFile reads a file named in the plan, relative to the plan's
// directory, through the parser's opener (so fuzzing touches no file).
func (p *parser) readBodyFile(n *yaml.Node, name string) ([]byte, bool) {
	if name == "" {
		p.errf(n, "bad file name: expected the path of a file to send")
		return nil, false
	}
	path := p.resolve(name)
	if !p.confined(n, name, path) {
		return nil, false
	}
	rc, err := p.open(path)
	if err != nil {
		p.errf(n, "cannot read %s: %s", q(name), fileErr(err))
		return nil, false
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBodyFile+1))
	if err != nil {
		p.errf(n, "cannot read %s: %s", q(name), fileErr(err))
		return nil, false
	}
	if len(data) > maxBodyFile {
		p.errf(n, "file %s is larger than %d MiB: every user would send it from memory", q(name), maxBodyFile>>20)
		return nil, false
	}
	return data, true
}

// fileErr is an open or read error without the path, which the message
// already names as the plan wrote it.
func fileErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// typeByExtension is the media type of a file name's extension, or def.
func typeByExtension(name, def string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return def
}

// multipart compiles multipart: {NAME: VALUE | {value, content_type} |
// {file, content_type, filename}} into one template: the boundary lines,
// part headers and file contents are literal text, field values may hold
// references.
func (p *parser) multipart(n *yaml.Node, sc *scope) (*Template, string) {
	list, ok := p.mapping(n, "multipart")
	if !ok {
		return nil, ""
	}
	if len(list) == 0 {
		p.errf(deref(n), "empty multipart: expected fields and files such as {title: Cat, photo: {file: cat.jpg}}")
		return nil, ""
	}
	var parts []mpPart
	good := true
	for _, e := range list {
		pt, ok := p.multipartPart(e)
		good = good && ok
		if pt != nil {
			parts = append(parts, *pt)
		}
	}
	// Parts that read well are compiled even when others did not, so
	// their template errors are reported in the same pass.
	boundary := newBoundary(parts, func(pt mpPart) []byte { return pt.data })
	var b builder
	var src strings.Builder
	src.WriteString("multipart:")
	for _, pt := range parts {
		head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + pt.name + "\""
		if pt.value == nil {
			head += "; filename=\"" + pt.filename + "\""
		}
		head += "\r\n"
		if pt.ctype != "" {
			head += "Content-Type: " + pt.ctype + "\r\n"
		}
		b.lit(head + "\r\n")
		if pt.value != nil {
			if _, ok := p.tmplInto(&b, pt.value, "multipart field "+q(pt.name), modeRaw, sc); !ok {
				good = false
			}
		} else {
			b.lit(string(pt.data))
		}
		b.lit("\r\n")
		src.WriteString(" " + pt.name)
	}
	b.lit("--" + boundary + "--\r\n")
	if !good {
		return nil, ""
	}
	return b.template(src.String()), "multipart/form-data; boundary=" + boundary
}

// mpPart is one part of a multipart body: a text field or a file.
type mpPart struct {
	name, filename, ctype string
	value                 *yaml.Node // a text field
	data                  []byte     // a file's content
}

// multipartPart reads one part: a text field given as a scalar or as
// {value:}, or a file read at load as {file:}. good is false when the
// part has an error (reported); a part with a bad header is still
// returned, so its template's errors are reported in the same pass.
func (p *parser) multipartPart(e kv) (*mpPart, bool) {
	what := "multipart part " + q(e.key)
	if e.key == "" || strings.ContainsAny(e.key, "\r\n\"") {
		p.errf(e.k, "bad multipart name %s: expected a name without quotes or line breaks", q(e.key))
		return nil, false
	}
	pt := mpPart{name: e.key}
	if v := deref(e.v); v.Kind != yaml.MappingNode {
		pt.value = v
		return &pt, true
	}
	f := p.fields(e.v, what, []string{"value", "file", "content_type", "filename"})
	src := p.oneOf(f, []string{"value", "file"}, what, "value (a text field) or file (an upload)")
	if src == nil {
		if p.missing(e.v, "value") && p.missing(e.v, "file") {
			p.errf(e.k, "%s has no value or file: expected {file: photo.jpg, content_type: image/jpeg} or {value: text}", what)
		}
		return nil, false
	}
	good := p.partHeaders(&pt, f)
	if src.key == "value" {
		if _, ok := f["filename"]; ok {
			p.errf(f["filename"].k, "%s is a text field: filename applies to file parts only", what)
			good = false
		}
		pt.value = src.v
		return &pt, good
	}
	name, ok := p.text(src.v, "file")
	if !ok {
		return nil, false
	}
	data, ok := p.readBodyFile(src.v, name)
	if !ok {
		return nil, false
	}
	pt.data = data
	if pt.filename == "" {
		pt.filename = filepath.Base(name)
	}
	if pt.ctype == "" {
		pt.ctype = typeByExtension(name, "application/octet-stream")
	}
	return &pt, good
}

// partHeaders reads a part's content_type and filename; false when one
// is bad (reported).
func (p *parser) partHeaders(pt *mpPart, f map[string]kv) bool {
	good := true
	if c, ok := f["content_type"]; ok {
		s, ok := p.text(c.v, "content_type")
		if ok && (s == "" || strings.ContainsAny(s, "\r\n")) {
			p.errf(c.v, "bad content_type %s: expected a media type such as image/jpeg", q(s))
			ok = false
		}
		pt.ctype, good = s, good && ok
	}
	if fn, ok := f["filename"]; ok {
		s, ok := p.text(fn.v, "filename")
		if ok && (s == "" || strings.ContainsAny(s, "\r\n\"")) {
			p.errf(fn.v, "bad filename %s: expected a name without quotes or line breaks", q(s))
			ok = false
		}
		pt.filename, good = s, good && ok
	}
	return good
}

// newBoundary makes a random boundary that none of the files contains. A
// field's rendered value could hold it only by a 1 in 2^96 chance.
func newBoundary[T any](parts []T, data func(T) []byte) string {
	for {
		var r [12]byte
		rand.Read(r[:])
		b := "stampede-" + hex.EncodeToString(r[:])
		clash := false
		for _, pt := range parts {
			if bytes.Contains(data(pt), []byte(b)) {
				clash = true
			}
		}
		if !clash {
			return b
		}
	}
}

// finishBody applies gzip: true and makes a body without references
// static. It runs after the step's headers and body are compiled.
func (p *parser) finishBody(st *Step, f map[string]kv) {
	gz := false
	if e, ok := f["gzip"]; ok {
		v, ok := p.boolean(e.v, "gzip")
		switch {
		case !ok:
			return
		case v && st.Body == nil:
			p.errf(e.k, "gzip: true but the step has no body: expected one of json, form, body, body_file, multipart")
			return
		case v:
			for _, h := range st.Headers {
				if strings.EqualFold(h.Name, "Content-Encoding") {
					p.errf(e.k, "gzip: true sets Content-Encoding itself: remove the Content-Encoding header")
					return
				}
			}
			gz = true
		}
	}
	_, file := f["body_file"]
	_, multi := f["multipart"]
	if st.Body == nil || !(gz || file || multi) {
		return
	}
	if gz {
		st.Headers = append(st.Headers, Header{Name: "Content-Encoding", Value: &Template{Source: "gzip", Parts: []Part{{Kind: PartLiteral, Literal: "gzip"}}}})
	}
	if !st.Body.Static() {
		st.Gzip = gz
		return
	}
	body := []byte(st.Body.String(nil))
	if gz {
		body = Gzip(nil, body, gzip.BestCompression)
	}
	st.StaticBody, st.Body = body[:len(body):len(body)], nil
}

// Gzip appends the gzip compression of data to dst at the given level.
func Gzip(dst, data []byte, level int) []byte {
	buf := bytes.NewBuffer(dst)
	w, _ := gzip.NewWriterLevel(buf, level)
	// Writes into memory (a bytes.Buffer) cannot fail.
	_, _ = w.Write(data)
	_ = w.Close()
	return buf.Bytes()
}

// recordingOpen is open, noting each file it opened (Plan.Files), once.
func (p *parser) recordingOpen(open func(string) (io.ReadCloser, error)) func(string) (io.ReadCloser, error) {
	if open == nil {
		return nil
	}
	return func(path string) (io.ReadCloser, error) {
		rc, err := open(path)
		if err == nil && !slices.Contains(p.plan.files, path) {
			p.plan.files = append(p.plan.files, path)
		}
		return rc, err
	}
}
