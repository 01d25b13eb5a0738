package dashboard

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// TestOneRenderPerUpdate: pages asking for the same update at once share
// one render of the report. The first render is held until every page
// could have started one of its own (or a few seconds, should they not
// all get there), so a render per page would show.
func TestOneRenderPerUpdate(t *testing.T) {
	const pages = 8
	var mu sync.Mutex
	renders := 0
	entered := make(chan struct{}, 2*pages)
	orig := renderHTML
	t.Cleanup(func() { renderHTML = orig })
	renderHTML = func(w io.Writer, r *result.Result) error {
		mu.Lock()
		renders++
		mu.Unlock()
		entered <- struct{}{}
		deadline := time.After(3 * time.Second)
		for n := 1; n < pages; n++ {
			select {
			case <-entered:
			case <-deadline:
				return orig(w, r)
			}
		}
		return orig(w, r)
	}
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	for update := 1; update <= 2; update++ {
		s.Sample(snap(int64(10 * update)))
		bodies := make([][]byte, pages)
		seqs := make([]string, pages)
		var wg sync.WaitGroup
		for i := range pages {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := http.Get(s.URL() + "/report")
				if err != nil {
					t.Error(err)
					return
				}
				defer r.Body.Close()
				if r.StatusCode != http.StatusOK {
					t.Errorf("page %d: %s", i, r.Status)
				}
				bodies[i], _ = io.ReadAll(r.Body)
				seqs[i] = r.Header.Get("X-Stampede-Seq")
			}()
		}
		wg.Wait()
		mu.Lock()
		n := renders
		mu.Unlock()
		if n != update {
			t.Fatalf("after update %d, %d pages asking at once caused %d renders in all, want %d", update, pages, n, update)
		}
		for i := range pages {
			if !bytes.Equal(bodies[i], bodies[0]) || seqs[i] != seqs[0] || len(bodies[i]) == 0 {
				t.Errorf("update %d: page %d got seq %s and %d bytes, page 0 seq %s and %d bytes", update, i, seqs[i], len(bodies[i]), seqs[0], len(bodies[0]))
			}
		}
		// Drain what the held render did not take, so the next update's
		// render counts only its own callers.
		for len(entered) > 0 {
			<-entered
		}
	}
}
