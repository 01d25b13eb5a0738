package lang

import "github.com/grafana/sobek"

// The objects a script reads, each a view of the calling host (jsVM.cur):
// made once per runtime, so a call builds none.

// capturesObj is the script's captures, read-only (set() writes).
type capturesObj struct{ vm *jsVM }

func (c *capturesObj) Get(key string) sobek.Value {
	if v, ok := c.vm.cur.h.Capture(key); ok {
		return c.vm.rt.ToValue(v)
	}
	return nil
}

func (c *capturesObj) Set(key string, _ sobek.Value) bool {
	panic(c.vm.rt.NewTypeError("captures are read-only: use set(%q, value), with %q in the step's sets", key, key))
}

func (c *capturesObj) Has(key string) bool {
	_, ok := c.vm.cur.h.Capture(key)
	return ok
}

func (c *capturesObj) Delete(string) bool { return false }
func (c *capturesObj) Keys() []string     { return c.vm.cur.h.CaptureKeys() }

// varsObj is the plan's vars, read-only.
type varsObj struct{ vm *jsVM }

func (v *varsObj) Get(key string) sobek.Value {
	s, ok := v.vm.cur.h.Var(key)
	if !ok {
		return nil
	}
	return v.vm.rt.ToValue(s)
}

func (v *varsObj) Set(string, sobek.Value) bool {
	panic(v.vm.rt.NewTypeError("vars are read-only"))
}

func (v *varsObj) Has(key string) bool {
	_, ok := v.vm.cur.h.Var(key)
	return ok
}

func (v *varsObj) Delete(string) bool { return false }
func (v *varsObj) Keys() []string     { return v.vm.cur.h.VarKeys() }

// responseObj is the last response of the iteration: status (0 before
// any request), headers and body. The body is turned into a string only
// when the script reads it.
type responseObj struct {
	vm      *jsVM
	headers *sobek.Object
}

var responseKeys = []string{"status", "headers", "body"}

func (r *responseObj) Get(key string) sobek.Value {
	h := r.vm.cur.h
	switch key {
	case "status":
		if !h.HasResponse() {
			return r.vm.rt.ToValue(0)
		}
		return r.vm.rt.ToValue(h.Status())
	case "headers":
		return r.headers
	case "body":
		if !h.HasResponse() {
			return r.vm.rt.ToValue("")
		}
		return r.vm.rt.ToValue(string(h.Body()))
	}
	return nil
}

func (r *responseObj) Set(string, sobek.Value) bool {
	panic(r.vm.rt.NewTypeError("response is read-only"))
}

func (r *responseObj) Has(key string) bool {
	for _, k := range responseKeys {
		if k == key {
			return true
		}
	}
	return false
}

func (r *responseObj) Delete(string) bool { return false }
func (r *responseObj) Keys() []string     { return responseKeys }

// headersObj is the last response's headers by name, any case.
type headersObj struct{ vm *jsVM }

func (h *headersObj) Get(key string) sobek.Value {
	if !h.vm.cur.h.HasResponse() {
		return nil
	}
	if v, ok := h.vm.cur.h.Header(key); ok {
		return h.vm.rt.ToValue(string(v))
	}
	return nil
}

func (h *headersObj) Set(string, sobek.Value) bool {
	panic(h.vm.rt.NewTypeError("response.headers are read-only: header(name, value) sets one for the next request"))
}

func (h *headersObj) Has(key string) bool {
	if !h.vm.cur.h.HasResponse() {
		return false
	}
	_, ok := h.vm.cur.h.Header(key)
	return ok
}

func (h *headersObj) Delete(string) bool { return false }

func (h *headersObj) Keys() []string {
	if !h.vm.cur.h.HasResponse() {
		return nil
	}
	return h.vm.cur.h.HeaderNames()
}
