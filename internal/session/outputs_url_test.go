package session

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// TestURLPasswordFromEnvWithSpecialCharacters: a ${NAME} password holding
// @ : / # % and a space reaches the receiver as it is; before, the
// expanded URL did not parse and the error printed the password.
func TestURLPasswordFromEnvWithSpecialCharacters(t *testing.T) {
	const secret = "p@ss:w/rd%#? x"
	var mu sync.Mutex
	var users, passwords []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		mu.Lock()
		users, passwords = append(users, u), append(passwords, p)
		mu.Unlock()
	}))
	defer srv.Close()
	pr := Process{Stderr: io.Discard, LookupEnv: func(name string) (string, bool) {
		if name == "MYKEY" {
			return secret, true
		}
		return "", false
	}}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, spec := range []string{"prometheus-rw=http://u:${MYKEY}@" + host + "/api/v1/write", "otlp=http://u:${MYKEY}@" + host} {
		oo, err := Outputs{Streams: []string{spec}, TestID: "pw"}.open(pr)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if strings.Contains(err2str(err), "w/rd") {
			t.Errorf("%s: the password shows: %v", spec, err)
		}
		r := &result.Result{Plan: result.PlanInfo{Name: "pw"}, Run: result.RunInfo{Started: time.Now()},
			Steps: []result.Step{{Scenario: "s", Name: "get", Requests: 1, Successful: 1}}}
		for _, s := range oo.sinks {
			s.Sample(r)
			if err := s.Close(r); err != nil {
				t.Errorf("%s: %v", spec, err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(passwords) == 0 {
		t.Fatal("no push arrived")
	}
	for i := range passwords {
		if users[i] != "u" || passwords[i] != secret {
			t.Errorf("push %d: user %q password %q, want u and %q", i, users[i], passwords[i], secret)
		}
	}
}

func err2str(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestBadURLErrorHidesThePassword: a URL refused, with its password in a
// ${NAME} or written out, is shown without it.
func TestBadURLErrorHidesThePassword(t *testing.T) {
	pr := Process{Stderr: io.Discard, LookupEnv: func(name string) (string, bool) {
		if name == "MYKEY" {
			return "hunter2", true
		}
		return "", false
	}}
	for _, spec := range []string{
		"prometheus-rw=ftp://u:${MYKEY}@127.0.0.1:9/api/v1/write",
		"otlp=ftp://u:${MYKEY}@127.0.0.1:9",
		"prometheus-rw=http://u:hunter2%zz@127.0.0.1:9/api/v1/write",
		"otlp=http://u:hunter2%zz@127.0.0.1:9",
	} {
		oo, err := Outputs{Streams: []string{spec}}.open(pr)
		if err == nil {
			closeSinks(oo.sinks)
			t.Errorf("%s: opened", spec)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the password shows: %v", spec, err)
		}
	}
}

// TestDuplicateLabelRefused: --label env=a --label env=b made every
// batch a 500 "label name not unique" at the receiver; it is a usage
// error before any load, for a run and for the pods of k8s.
func TestDuplicateLabelRefused(t *testing.T) {
	pr := Process{Stderr: io.Discard}
	o := Outputs{Streams: []string{"prometheus-rw=http://127.0.0.1:9/api/v1/write"}, Labels: []string{"env=a", "env=b"}}
	oo, err := o.open(pr)
	if err == nil {
		closeSinks(oo.sinks)
		t.Fatal("opened with env given twice")
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "env") {
		t.Errorf("%v, want a usage error (exit 2) naming env", err)
	}
	p, pf := streamsTestPlan(t)
	if _, _, err := pr.manifest(p, K8sRequest{PlanFile: pf, Segments: 2, PodOutputs: o}, time.Now().Add(time.Minute)); err == nil {
		t.Error("k8s: a manifest was made with env given twice")
	}
}

// TestK8sURLWithEnvPassword: the documented ${NAME} password in a URL is
// read in the pod; the URL check here must not refuse it (it did: { and }
// are not URL characters).
func TestK8sURLWithEnvPassword(t *testing.T) {
	p, pf := streamsTestPlan(t)
	o := Outputs{Streams: []string{"prometheus-rw=http://u:${PROM_PASSWORD}@prometheus.monitoring:9090/api/v1/write"}}
	if _, _, err := (Process{Stderr: io.Discard}).manifest(p, K8sRequest{PlanFile: pf, Segments: 2, PodOutputs: o}, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}
