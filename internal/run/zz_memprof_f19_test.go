package run

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"
)

func TestZZMemProfF19(t *testing.T) {
	if os.Getenv("F19_MEMPROF") == "" {
		t.Skip()
	}
	runtime.MemProfileRate = 1
	p := mustPlan(t, `
target: http://127.0.0.1:18093
scenarios: {s: {steps: [{get: /}]}}
load: {pace: 10s, grace: 1s, stages: [{duration: 14s, users: 3000}]}
`)
	go func() {
		time.Sleep(12 * time.Second)
		runtime.GC()
		f, _ := os.Create(os.Getenv("F19_MEMPROF"))
		pprof.WriteHeapProfile(f)
		f.Close()
	}()
	if _, err := Run(context.Background(), p, Options{}); err != nil {
		t.Fatal(err)
	}
}
