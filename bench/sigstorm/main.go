// Command sigstorm is Azure SignalR Service over its quota, on loopback,
// for bench/signalrstorm.sh: sigtest.Azure's app server (negotiate
// answers {url, accessToken}) and service (bearer check, then a quota of
// connections held at once, above which negotiate is answered 429 with
// Retry-After and "Connection count reaches limit."), serving
// Server-Sent Events. It prints the app's hub URL on its first line,
// counts the service's negotiates (admitted and refused) in each second
// from its start, and serves them as JSON at GET /__stats on -stats.
// It stops on SIGINT or SIGTERM.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
)

// stats is what GET /__stats answers.
type stats struct {
	Quota     int     `json:"quota"`
	Open      int     `json:"open"`
	Issued    int64   `json:"issued"`
	Admitted  int64   `json:"admitted"`
	OverQuota int64   `json:"over_quota"`
	PerSecond []int64 `json:"negotiates_per_s"` // service negotiates, admitted or refused
}

func main() {
	quota := flag.Int("quota", 1000, "connections the service holds at once")
	retryAfter := flag.Duration("retry-after", 5*time.Second, "the 429's Retry-After (whole seconds)")
	addr := flag.String("stats", "127.0.0.1:8299", "where GET /__stats listens (loopback)")
	flag.Parse()

	a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"ServerSentEvents"}}, Quota: *quota, RetryAfter: *retryAfter}
	a.Start()
	fmt.Println(a.AppURL())

	var mu sync.Mutex
	var perSecond []int64
	go func() {
		var last int64
		for range time.Tick(time.Second) {
			n := a.Admitted.Load() + a.OverQuota.Load()
			mu.Lock()
			perSecond = append(perSecond, n-last)
			mu.Unlock()
			last = n
		}
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /__stats", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		st := stats{Quota: *quota, Open: a.Hub.Open(), Issued: a.Issued.Load(), Admitted: a.Admitted.Load(),
			OverQuota: a.OverQuota.Load(), PerSecond: append([]int64(nil), perSecond...)}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st) // a stats reader that went away needs nothing
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = srv.Close() // stopping: nothing to do about a failed close
	a.Close()
}
