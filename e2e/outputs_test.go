package e2e

import (
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
)

// startPrometheus runs Debian's prometheus with its remote-write receiver
// on a loopback port, storing into a temp dir; it returns the base URL.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no prometheus binary on PATH (.ci/services.sh installs Debian's prometheus package)")
		}
		t.Skip("skipping: no prometheus binary on PATH (apt-get install prometheus; .ci/services.sh does)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n"), 0o644)
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver")
	logf, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("prometheus did not get ready:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promQuery is an instant query at the run's last sample: after it the
// run's stale markers end every series.
func promQuery(t *testing.T, base, q string) []float64 {
	t.Helper()
	_, last, _ := promSpan(t, base, "stampede_requests_total")
	return promAt(t, base, q, last)
}

// otlpReceiver decodes exports with the OpenTelemetry collector's pdata.
type otlpReceiver struct {
	mu  sync.Mutex
	got []pmetric.Metrics
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.got = append(o.got, req.Metrics())
	o.mu.Unlock()
	b, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

// requests is stampede.requests summed over the export's data points.
func (o *otlpReceiver) requests(i int) float64 {
	var n float64
	rms := o.got[i].ResourceMetrics()
	for a := 0; a < rms.Len(); a++ {
		sms := rms.At(a).ScopeMetrics()
		for b := 0; b < sms.Len(); b++ {
			ms := sms.At(b).Metrics()
			for c := 0; c < ms.Len(); c++ {
				if m := ms.At(c); m.Name() == "stampede.requests" {
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						n += m.Sum().DataPoints().At(d).DoubleValue()
					}
				}
			}
		}
	}
	return n
}

// TestOutputsThroughTheBinary runs one plan with every output at once: a
// real Prometheus, an OTLP receiver, a CSV file, a JUnit file, and a
// remote-write receiver that is not there, which must cost nothing but a
// warning.
func TestOutputsThroughTheBinary(t *testing.T) {
	prom := startPrometheus(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer target.Close()
	rc := &otlpReceiver{}
	otlpSrv := httptest.NewServer(rc)
	defer otlpSrv.Close()
	down := "http://" + hostile.Refused(t) + "/api/v1/write"

	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: outputs
target: %s
scenarios:
  reader:
    steps:
      - name: home
        get: /
      - name: gone
        get: /missing
      - think: 50ms
load:
  stages:
    - {duration: 4s, users: 2}
thresholds: ["home: p95 < 30s", "error_rate < 1%%"]
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	csvPath, junitPath, res := filepath.Join(dir, "series.csv"), filepath.Join(dir, "junit.xml"), filepath.Join(dir, "r.json")
	out := e2etest.Stampede(t, 90*time.Second, "", "run", planPath, "-o", res, "-q",
		"--output", "csv="+csvPath,
		"--output", "prometheus-rw="+prom+"/api/v1/write",
		"--output", "otlp="+otlpSrv.URL,
		"--output", "prometheus-rw="+down,
		"--junit", junitPath)
	// error_rate fails (every "gone" is a 404): exit 1, all else whole.
	if out.Code != 1 {
		t.Fatalf("run: %s", out)
	}
	r := e2etest.ReadResult(t, res)
	if r.Run.Partial {
		t.Fatalf("a receiver that is down made the run partial: %s", r.Run.PartialReason)
	}
	steps := map[string]int64{}
	for _, s := range r.Steps {
		steps[s.Name] = s.Requests
	}
	if steps["home"] == 0 || steps["gone"] == 0 {
		t.Fatalf("steps %v", steps)
	}

	// The receiver that is down: one warning at the end, counted.
	if n := strings.Count(out.Stderr, "warning: output prometheus-rw="+down); n != 1 || !strings.Contains(out.Stderr, "batches not delivered") {
		t.Errorf("want one counted warning for the down receiver:\n%s", out.Stderr)
	}

	// Prometheus holds the final figures.
	for name, n := range steps {
		got := promQuery(t, prom, fmt.Sprintf(`stampede_requests_total{plan="outputs",step=%q}`, name))
		if len(got) != 1 || got[0] != float64(n) {
			t.Errorf("prometheus has %v requests for %s, the result %d", got, name, n)
		}
	}
	if got := promQuery(t, prom, `stampede_failures_total{step="gone",class="client_error"}`); len(got) != 1 || got[0] != float64(steps["gone"]) {
		t.Errorf("prometheus client_error failures %v, want %d", got, steps["gone"])
	}
	if got := promQuery(t, prom, `count_over_time(stampede_requests_total{step="home"}[5m])`); len(got) != 1 || got[0] < 2 {
		t.Errorf("want the counter pushed during the run and at its end, got %v samples", got)
	}

	// OTLP: pushed during the run, and the last export is the final.
	rc.mu.Lock()
	if len(rc.got) < 2 {
		t.Errorf("%d OTLP exports, want one a second and a final one", len(rc.got))
	} else if last := rc.requests(len(rc.got) - 1); last != float64(steps["home"]+steps["gone"]) || rc.requests(0) > last {
		t.Errorf("OTLP requests: first %v, last %v, result %d", rc.requests(0), last, steps["home"]+steps["gone"])
	}
	rc.mu.Unlock()

	// CSV: one row per interval of the result's series, adding up to it.
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows)-1 != len(r.Series.T) {
		t.Fatalf("csv has %d rows, the series %d intervals", len(rows)-1, len(r.Series.T))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var ok, failed, check int64
	for _, row := range rows[1:] {
		a, _ := strconv.ParseInt(row[col["ok"]], 10, 64)
		b, _ := strconv.ParseInt(row[col["failed"]], 10, 64)
		c, _ := strconv.ParseInt(row[col["failed_client_error"]], 10, 64)
		ok, failed, check = ok+a, failed+b, check+c
	}
	var wantOK, wantFailed int64
	for i := range r.Series.T {
		wantOK += r.Series.OK[i]
		for _, v := range r.Series.Failed {
			wantFailed += v[i]
		}
	}
	if ok != wantOK || failed != wantFailed || check != failed || ok == 0 {
		t.Errorf("csv sums ok %d failed %d (client_error %d); series ok %d failed %d", ok, failed, check, wantOK, wantFailed)
	}

	// JUnit: the failed threshold and the failing step, by name.
	b, err := os.ReadFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	failing := map[string]string{}
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failing[c.Name] = c.Failure.Message
		}
	}
	if doc.Tests != 4 || doc.Failures != 2 || !strings.HasPrefix(failing["error_rate < 1%"], "error_rate < 1% failed: measured") ||
		!strings.Contains(failing["reader/gone"], fmt.Sprintf("%d of %d requests failed (%d client_error); most often: HTTP 404 Not Found: 404 page not found", steps["gone"], steps["gone"], steps["gone"])) {
		t.Errorf("junit: %d tests, %d failures, failing %v\n%s", doc.Tests, doc.Failures, failing, b)
	}
}

// TestJUnitReportFormat: report --format junit renders a saved result the
// same way --junit does at the end of a run.
func TestJUnitReportFormat(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: j
target: %s
scenarios:
  s:
    steps:
      - get: /
      - think: 100ms
load:
  stages:
    - {duration: 1s, users: 1}
thresholds: ["p99 < 30s"]
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	res, j1 := filepath.Join(dir, "r.json"), filepath.Join(dir, "run.xml")
	if out := e2etest.Stampede(t, 60*time.Second, "", "run", planPath, "-o", res, "-q", "--junit", j1); out.Code != 0 {
		t.Fatalf("run: %s", out)
	}
	rep := e2etest.Stampede(t, 60*time.Second, "", "report", res, "--format", "junit")
	if rep.Code != 0 {
		t.Fatalf("report: %s", rep)
	}
	b, _ := os.ReadFile(j1)
	if string(b) != rep.Stdout || !strings.Contains(rep.Stdout, `<testcase name="p99 &lt; 30s"`) {
		t.Errorf("--junit and report --format junit differ:\n%s\n---\n%s", b, rep.Stdout)
	}
}

// TestJUnitSweepLevels: a sweep writes one suite per level, each with its
// SLO cases and its steps, and nothing said twice.
func TestJUnitSweepLevels(t *testing.T) {
	planPath := e2etest.WritePlan(t, `
name: levels
target: demo
scenarios:
  voter:
    steps:
      - get: /elections/2026/parties
      - think: 100ms
load:
  stages:
    - {duration: 1s, users: 1}
thresholds: ["p95 < 30s", "p99 < 1us"]
`, nil)
	dir := filepath.Dir(planPath)
	j := filepath.Join(dir, "sweep.xml")
	out := e2etest.Stampede(t, 120*time.Second, "", "sweep", planPath, "--users", "1,2", "--hold", "1s", "-q", "-o", filepath.Join(dir, "s.json"), "--junit", j)
	if out.Code != 1 {
		t.Fatalf("sweep (p99 < 1us must fail): %s", out)
	}
	b, err := os.ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 2 {
		t.Fatalf("%d suites, want one per level:\n%s", len(doc.Suites), b)
	}
	for i, s := range doc.Suites {
		if !strings.Contains(s.Name, fmt.Sprintf("level %d: users %d", i+1, i+1)) || s.Tests != 3 || s.Failures != 1 {
			t.Errorf("suite %q: %d tests, %d failures\n%s", s.Name, s.Tests, s.Failures, b)
		}
		if s.Cases[0].Name != "p95 < 30s" || !strings.HasSuffix(s.Cases[0].Classname, ".slo") {
			t.Errorf("first case %+v", s.Cases[0])
		}
	}
}

// TestOutputFlagsRefused: a bad output is a usage error before any load.
func TestOutputFlagsRefused(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: bad
target: %s
scenarios:
  s:
    steps:
      - get: /
load:
  stages:
    - {duration: 1s, users: 1}
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	for _, args := range [][]string{
		{"--output", "influx=http://127.0.0.1:1"},
		{"--output", "csv"},
		{"--output", "prometheus-rw=ftp://127.0.0.1/x"},
		{"--output", "csv=" + filepath.Join(dir, "no", "such", "dir.csv")},
		{"--junit", filepath.Join(dir, "no", "such", "j.xml")},
	} {
		out := e2etest.Stampede(t, 60*time.Second, "", append([]string{"run", planPath, "-q", "-o", filepath.Join(dir, "r.json")}, args...)...)
		if out.Code != 2 || !strings.Contains(out.Stderr, args[len(args)-2]) {
			t.Errorf("%v: want exit 2 naming the flag: %s", args, out)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the target before the refusal", hits.Load())
	}
}

// TestOTelResourceFromEnvironment: the binary reads OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES, as every OpenTelemetry SDK does, and the
// exports carry them on their resource (before, always
// service.name=stampede), with the run's testid on every data point.
func TestOTelResourceFromEnvironment(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	rc := &otlpReceiver{}
	otlpSrv := httptest.NewServer(rc)
	defer otlpSrv.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: otel
target: %s
scenarios:
  s:
    steps:
      - get: /
      - think: 100ms
load:
  stages: [{duration: 2s, users: 1}]
`, target.URL), nil)
	p := e2etest.Start(t, "", []string{"OTEL_SERVICE_NAME=checkout-load", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=ci,team=perf%20eng"},
		"run", planPath, "-q", "-o", filepath.Join(filepath.Dir(planPath), "r.json"), "--output", "otlp="+otlpSrv.URL, "--testid", "otel-1")
	if o := p.Wait(t, time.Minute); o.Code != 0 {
		t.Fatalf("run: %s", o)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) == 0 {
		t.Fatal("no export")
	}
	rm := rc.got[len(rc.got)-1].ResourceMetrics().At(0)
	res := rm.Resource().Attributes().AsRaw()
	if res["service.name"] != "checkout-load" || res["deployment.environment"] != "ci" || res["team"] != "perf eng" {
		t.Errorf("resource %v, want the OTEL_ variables' service name and attributes", res)
	}
	ms := rm.ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i)
		if m.Name() == "stampede.target" && m.Unit() == "1" {
			t.Errorf("stampede.target has unit 1: Prometheus names it stampede_target_ratio")
		}
		if m.Name() == "stampede.requests" {
			if id, _ := m.Sum().DataPoints().At(0).Attributes().Get("testid"); id.AsString() != "otel-1" {
				t.Errorf("requests data point attributes %v, want testid otel-1", m.Sum().DataPoints().At(0).Attributes().AsRaw())
			}
		}
	}
}
