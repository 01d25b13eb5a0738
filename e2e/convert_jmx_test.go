package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// ballotBox hands out a fresh party id on every GET /parties and counts
// a vote only when it sends back one it handed out, with the voter's row
// of the CSV: a plan that lost the JSON extractor, the CSV data set or
// the header manager fails every vote.
type ballotBox struct {
	mu      sync.Mutex
	handed  map[string]bool
	counted atomic.Int64
	refused atomic.Int64
}

func (b *ballotBox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	voter, district := r.Header.Get("voter-id"), ""
	switch {
	case r.Method == "GET" && r.URL.Path == "/parties":
		district = r.URL.Query().Get("district")
		if voter == "" || "d"+strings.TrimPrefix(voter, "v") != district {
			b.refused.Add(1)
			http.Error(w, "voter and district do not match", 400)
			return
		}
		id := make([]byte, 8)
		rand.Read(id)
		party := "p-" + hex.EncodeToString(id)
		b.mu.Lock()
		b.handed[party] = true
		b.mu.Unlock()
		fmt.Fprintf(w, `{"parties":[{"id":"p-none"},{"id":%q}]}`, party)
	case r.Method == "POST" && r.URL.Path == "/votes":
		var v struct{ PartyID, District string }
		err := json.NewDecoder(r.Body).Decode(&v)
		b.mu.Lock()
		ok := err == nil && b.handed[v.PartyID] && r.Header.Get("Content-Type") == "application/json" &&
			"d"+strings.TrimPrefix(voter, "v") == v.District
		delete(b.handed, v.PartyID)
		b.mu.Unlock()
		if !ok {
			b.refused.Add(1)
			http.Error(w, "not a party handed out, or not this voter's", 400)
			return
		}
		b.counted.Add(1)
		fmt.Fprint(w, `{"status":"counted"}`)
	default:
		http.NotFound(w, r)
	}
}

// The floor of issue 30 §6: a .jmx with a stepping thread group, a CSV
// data set, a header manager, two samplers, a JSON extractor, an
// assertion and a constant timer converts to a plan that loads and runs
// against a local target with no failure.
func TestConvertJMXRunsWithoutFailures(t *testing.T) {
	box := &ballotBox{handed: map[string]bool{}}
	srv := httptest.NewServer(box)
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]

	dir := t.TempDir()
	for _, f := range []string{"floor.jmx", "voters.csv"} {
		data, err := os.ReadFile(filepath.Join(e2etest.ModRoot, "internal/convert/jmx/testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	planPath := filepath.Join(dir, "floor.yaml")
	conv := e2etest.Stampede(t, 60*time.Second, dir, "convert", "jmx", "floor.jmx", "-o", planPath)
	if conv.Code != 0 {
		t.Fatalf("convert: %s", conv)
	}
	text, _ := os.ReadFile(planPath)
	for _, want := range []string{"steps: 2}", "{json: parties.1.id}", "voters: {file: voters.csv", "{think: 100ms}", "body_contains: counted", "${TARGET_PORT:-8080}"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the plan has no %q:\n%s", want, text)
		}
	}
	resultPath := filepath.Join(dir, "r.json")
	run := e2etest.Start(t, dir, []string{"TARGET_PORT=" + port}, "run", planPath, "-o", resultPath, "-q").Wait(t, 90*time.Second)
	if run.Code != 0 {
		t.Fatalf("run: %s\nplan:\n%s", run, text)
	}
	res := e2etest.ReadResult(t, resultPath)
	if res.Totals.Requests == 0 || res.Totals.Failed != 0 {
		t.Fatalf("%d requests, %d failed (want some, none failed): %s", res.Totals.Requests, res.Totals.Failed, run)
	}
	var votes int64
	for _, s := range res.Steps {
		if s.Name == "POST vote" {
			votes = s.Successful
		}
	}
	if votes == 0 || votes != box.counted.Load() || box.refused.Load() != 0 {
		t.Fatalf("the result counts %d votes, the server %d (and refused %d)", votes, box.counted.Load(), box.refused.Load())
	}
	t.Logf("%d requests, %d failed; %d votes counted by the result and the server", res.Totals.Requests, res.Totals.Failed, votes)
}

// reviewJMX is the Azure quickstart's shape: a placeholder for the
// server, and a step that expects a 404 with "ignore status".
const reviewJMX = `<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2"><hashTree>
<TestPlan testclass="TestPlan" testname="Quickstart" enabled="true"/>
<hashTree>
<ThreadGroup testclass="ThreadGroup" testname="Users" enabled="%s">
<stringProp name="ThreadGroup.num_threads">2</stringProp><stringProp name="ThreadGroup.ramp_time">0</stringProp>
<boolProp name="ThreadGroup.scheduler">true</boolProp><stringProp name="ThreadGroup.duration">1</stringProp></ThreadGroup>
<hashTree>
<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="Home page" enabled="true">
<stringProp name="HTTPSampler.domain">{my-app-endpoint}</stringProp><stringProp name="HTTPSampler.protocol">https</stringProp>
<stringProp name="HTTPSampler.path">/</stringProp><stringProp name="HTTPSampler.method">GET</stringProp></HTTPSamplerProxy>
<hashTree/>
<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="Missing page" enabled="true">
<stringProp name="HTTPSampler.path">/gone</stringProp><stringProp name="HTTPSampler.method">GET</stringProp></HTTPSamplerProxy>
<hashTree>
<ResponseAssertion testclass="ResponseAssertion" testname="404 expected" enabled="true">
<collectionProp name="Asserion.test_strings"><stringProp name="51512">404</stringProp></collectionProp>
<stringProp name="Assertion.test_field">Assertion.response_code</stringProp>
<boolProp name="Assertion.assume_success">true</boolProp><intProp name="Assertion.test_type">8</intProp></ResponseAssertion>
<hashTree/>
</hashTree>
</hashTree></hashTree></hashTree></jmeterTestPlan>`

// A .jmx whose server is a placeholder converts to target: ${TARGET},
// which the run reads from the environment, and a step that expects a
// 404 counts the 404 a success (issue 30 §6 review, F1 and F6).
func TestConvertJMXPlaceholderServerRuns(t *testing.T) {
	var home, gone atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			home.Add(1)
			return
		}
		gone.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "q.jmx"), []byte(fmt.Sprintf(reviewJMX, "true")), 0o600); err != nil {
		t.Fatal(err)
	}
	conv := e2etest.Stampede(t, 60*time.Second, dir, "convert", "jmx", "q.jmx", "-o", "q.yaml")
	if conv.Code != 0 || strings.Contains(conv.Stderr, "please report") {
		t.Fatalf("convert: %s", conv)
	}
	text, _ := os.ReadFile(filepath.Join(dir, "q.yaml"))
	resultPath := filepath.Join(dir, "r.json")
	run := e2etest.Start(t, dir, []string{"TARGET=" + srv.URL}, "run", "q.yaml", "-o", resultPath, "-q").Wait(t, 90*time.Second)
	if run.Code != 0 {
		t.Fatalf("run: %s\nplan:\n%s", run, text)
	}
	res := e2etest.ReadResult(t, resultPath)
	if res.Totals.Requests == 0 || res.Totals.Failed != 0 || res.Totals.Requests != home.Load()+gone.Load() || gone.Load() == 0 {
		t.Fatalf("%d requests, %d failed; the server saw %d + %d 404s\nplan:\n%s", res.Totals.Requests, res.Totals.Failed, home.Load(), gone.Load(), text)
	}
}

// When nothing converts, the command says why: what it left out is
// printed with the error (issue 30 §6 review, F3).
func TestConvertJMXFailureSaysWhy(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "q.jmx"), []byte(fmt.Sprintf(reviewJMX, "false")), 0o600); err != nil {
		t.Fatal(err)
	}
	conv := e2etest.Stampede(t, 60*time.Second, dir, "convert", "jmx", "q.jmx", "-o", "q.yaml")
	if conv.Code != 2 || !strings.Contains(conv.Stderr, "no enabled thread group") ||
		!strings.Contains(conv.Stderr, `not converted: TestPlan/ThreadGroup "Users": disabled`) {
		t.Fatalf("convert of a plan whose only group is disabled: %s", conv)
	}
}
