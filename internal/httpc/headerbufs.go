package httpc

import "sync"

// headerBufs is a response's header storage (the copied header bytes and
// the fields that point into them). It is lent to a Response while its
// user works on an answer and given back to a process-wide pool when the
// user goes idle (Release), so thousands of users waiting between
// iterations hold none: about 575 bytes each, kept for reuse, was the
// largest part of an idle user's heap after the connection itself.
type headerBufs struct {
	hbuf []byte
	hdr  []Field
}

var headerPool = sync.Pool{New: func() any { return new(headerBufs) }}

// maxPooledHeader keeps one answer with a huge header block from pinning
// its storage in the pool.
const maxPooledHeader = 8 << 10

// takeHeaderBufs gives r header storage before an answer is parsed into it.
func (r *Response) takeHeaderBufs() {
	if r.hb == nil {
		r.hb = headerPool.Get().(*headerBufs)
		r.hbuf, r.Header = r.hb.hbuf, r.hb.hdr
		// The holder gets them back at Release; meanwhile it must not
		// pin storage the response may outgrow.
		r.hb.hbuf, r.hb.hdr = nil, nil
	}
	r.Header = r.Header[:0]
	r.hbuf = r.hbuf[:0]
}

// Release gives the answer's header storage back to the pool: Header is
// empty afterwards and nothing may hold on to its fields. Call it when
// the answer has been judged and nothing will look at it again (the end
// of an iteration); the next request takes storage again without
// allocating.
func (r *Response) Release() {
	hb := r.hb
	if hb == nil {
		return
	}
	r.hb = nil
	if cap(r.hbuf) <= maxPooledHeader {
		hb.hbuf, hb.hdr = r.hbuf[:0], r.Header[:0]
		headerPool.Put(hb)
	}
	r.hbuf, r.Header = nil, nil
}
