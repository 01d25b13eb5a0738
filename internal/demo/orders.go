package demo

import (
	"io"
	"net/http"
	"strconv"
	"strings"
)

// RouteOrders is the ordering route of the restaurant side (hub.go).
const RouteOrders = "POST /restaurants/{id}/orders"

// maxOrderBody bounds what an order may carry; the demo stores none of it.
const maxOrderBody = 16 << 10

// route sends the restaurant side's paths to their handlers and
// everything else to the election API.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == HubPath || strings.HasPrefix(p, HubPath+"/"):
		s.total.Add(1)
		k, err := s.kitchen()
		if err != nil {
			s.reply(w, http.StatusInternalServerError, []byte(`{"error":"hub unavailable"}`+"\n"))
			return
		}
		k.handler.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/restaurants/"):
		s.order(w, r)
	case p == UploadPath:
		s.upload(w, r) // upload.go
	case strings.HasPrefix(p, AuthPrefix):
		s.auth(w, r) // auth.go
	default:
		s.serve(w, r)
	}
}

// kitchen starts the hub on first use, so servers that never see a hub
// request (most tests) run none of its goroutines.
func (s *Server) kitchen() (*kitchen, error) {
	s.kitOnce.Do(func() {
		s.kitMu.Lock()
		defer s.kitMu.Unlock()
		if s.kitClosed {
			s.kitErr = errKitchenClosed
			return
		}
		s.kit, s.kitErr = newKitchen()
	})
	return s.kit, s.kitErr
}

type kitchenClosedError struct{}

func (kitchenClosedError) Error() string { return "demo: server closed" }

var errKitchenClosed error = kitchenClosedError{}

// CloseHub stops the kitchen hub, if it ever started.
func (s *Server) CloseHub() {
	s.kitMu.Lock()
	s.kitClosed = true
	k := s.kit
	s.kitMu.Unlock()
	if k != nil {
		k.close()
	}
}

// order serves POST /restaurants/{id}/orders: it goes through the same
// edge protections and database pool as the election routes, then pushes
// OrderPlaced to the restaurant's kitchen displays.
func (s *Server) order(w http.ResponseWriter, r *http.Request) {
	s.total.Add(1)
	rest, _ := strings.CutPrefix(r.URL.Path, "/restaurants/")
	id, ok := strings.CutSuffix(rest, "/orders")
	if !ok || id == "" || strings.Contains(id, "/") {
		s.byRoute[rOther].Add(1)
		s.reply(w, http.StatusNotFound, errNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.reply(w, http.StatusMethodNotAllowed, errMethod)
		return
	}
	if s.edgeRejects(w) {
		return
	}
	if n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, maxOrderBody+1)); n > maxOrderBody {
		s.reply(w, http.StatusRequestEntityTooLarge, []byte(`{"error":"order too large"}`+"\n"))
		return
	}
	if !s.query(w, r) {
		return
	}
	k, err := s.kitchen()
	if err != nil {
		s.reply(w, http.StatusServiceUnavailable, []byte(`{"error":"kitchen hub unavailable"}`+"\n"))
		return
	}
	oid := "o" + strconv.FormatUint(k.seq.Add(1), 10)
	k.placed(oid, id)
	b := make([]byte, 0, 64+len(id))
	b = append(b, `{"orderId":"`...)
	b = append(b, oid...)
	b = append(b, `","restaurantId":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"status":"placed"}`+"\n"...)
	s.reply(w, http.StatusCreated, b)
}
