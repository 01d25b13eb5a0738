package sigtest

import (
	"bytes"
	"net/http"
	"strings"
	"time"
)

func (h *Hub) poll(w http.ResponseWriter, r *http.Request, c *conn) {
	defer h.Polls.Add(1)
	c.mu.Lock()
	first := !c.started
	c.started = true
	c.mu.Unlock()
	if first {
		// The first poll completes the connection and returns at once.
		w.WriteHeader(http.StatusOK)
		return
	}
	hold := h.PollHold
	if hold <= 0 {
		hold = 90 * time.Second
	}
	var timeout <-chan time.Time
	if !h.NeverAnswerPolls {
		t := time.NewTimer(hold)
		defer t.Stop()
		timeout = t.C
	}
	for {
		if b := c.take(); len(b) > 0 {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b)
			return
		}
		select {
		case <-c.notify:
			if h.NeverAnswerPolls {
				continue
			}
		case <-timeout:
			w.WriteHeader(http.StatusOK)
			return
		case <-c.done:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (h *Hub) sse(w http.ResponseWriter, r *http.Request, c *conn) {
	over := make(chan struct{})
	defer close(over)
	c.mu.Lock()
	c.sseOver = over
	c.mu.Unlock()
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	if h.EndlessSSELine {
		chunk := bytes.Repeat([]byte("x"), 16<<10)
		_, _ = w.Write([]byte("data: "))
		for i := 0; i < 1024; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			fl.Flush()
		}
		<-r.Context().Done()
		return
	}
	for {
		if b := c.take(); len(b) > 0 {
			// One event per frame; a frame's lines each become a data
			// line (the client joins them with LF again).
			var ev bytes.Buffer
			for _, line := range strings.Split(string(b), "\n") {
				ev.WriteString("data: " + line + "\r\n")
			}
			ev.WriteString("\r\n")
			if _, err := w.Write(ev.Bytes()); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-c.notify:
		case <-c.done:
			return
		case <-r.Context().Done():
			c.close()
			return
		}
	}
}
