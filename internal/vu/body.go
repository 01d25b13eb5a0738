package vu

import (
	"compress/gzip"
	"sync"

	"github.com/stampede-load/stampede/internal/plan"
)

// bodyState is a user's request body buffers. A body finished at load
// (plan.Step.StaticBody: a file, a multipart without references, any
// static gzip body) is sent from the shared bytes without a copy, so a
// thousand users uploading one 10 MB photo hold it once, not a thousand
// times; that is also why the rendered body has a buffer of its own
// rather than reusing the request's, which may point at the shared bytes.
type bodyState struct {
	raw []byte // a rendered body
	gz  []byte // its compression, for gzip: true
}

// render returns the body of st for this request.
func (b *bodyState) render(st *Step, env *plan.Env) []byte {
	if st.StaticBody != nil {
		return st.StaticBody
	}
	b.raw = st.Body.Append(b.raw[:0], env)
	if !st.Gzip {
		return b.raw
	}
	w := gzipWriters.Get().(*gzipWriter)
	w.out = b.gz[:0]
	w.z.Reset(w)
	// Into memory (w.out): neither can fail.
	_, _ = w.z.Write(b.raw)
	_ = w.z.Close()
	b.gz, w.out = w.out, nil
	gzipWriters.Put(w)
	return b.gz
}

// gzipWriter compresses into a user's buffer. A compressor holds several
// hundred KiB of state, so they are pooled by the workers that use them
// rather than kept per user; BestSpeed because this runs per request on
// the generator, whose CPU is the test's budget.
type gzipWriter struct {
	z   *gzip.Writer
	out []byte
}

func (w *gzipWriter) Write(p []byte) (int, error) {
	w.out = append(w.out, p...)
	return len(p), nil
}

var gzipWriters = sync.Pool{New: func() any {
	w := &gzipWriter{}
	w.z, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
	return w
}}
