package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestDashboardInChromium watches a run's --dashboard in real headless
// Chromium: the charts grow while the run goes, nothing is fetched from
// anywhere but the dashboard itself, and at the end the page holds
// exactly what `stampede report --format html` makes of the result file.
func TestDashboardInChromium(t *testing.T) {
	exe := chromiumPath(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: live
target: %s
scenarios:
  reader:
    steps:
      - get: /
      - think: 50ms
load:
  stages:
    - {duration: 8s, users: 0 -> 4}
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	res := filepath.Join(dir, "r.json")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	proc := e2etest.Start(t, "", nil, "run", planPath, "-o", res, "-q", "--dashboard="+addr)
	base := waitDashboard(t, proc, addr) // with the run's token
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI containers run as root, where Chromium's sandbox cannot start
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	var mu sync.Mutex
	var foreign []string
	if err := chromedp.Listen(bctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok {
			u := ev.Request.URL
			if !strings.HasPrefix(u, base) && !strings.HasPrefix(u, "about:") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				mu.Lock()
				foreign = append(foreign, u)
				mu.Unlock()
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	poll := func(expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
			t.Fatalf("chromium: waiting for %s: %v", expr, err)
		}
	}
	points := func() int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int]("window.dash.points()"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// From the first update, the planned profile is drawn over the whole
	// planned duration (8s), ahead of the actual one.
	poll("window.dash.updates >= 1")
	planned, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`(function(){var p=window.dash.planned;if(!p)return [];var d=document.getElementById("planned").getAttribute("d")||"";return [p.t.length,p.t[p.t.length-1],Math.max.apply(null,p.v),(d.match(/L/g)||[]).length]})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(planned) != 4 {
		t.Fatalf("no planned profile at the first update")
	}
	if planned[0] < 2 || planned[1] != 8 || planned[2] != 4 || planned[3] < 1 {
		t.Errorf("planned profile at the first update: %v points, ends at %vs, peak %v users, %v segments drawn; want the 8s ramp to 4 users", planned[0], planned[1], planned[2], planned[3])
	}
	// Live: a report with charts, then more points on them.
	poll("window.dash.updates >= 1 && window.dash.points() > 0 && !window.dash.final")
	first := points()
	poll(fmt.Sprintf("window.dash.final || window.dash.points() > %d", first))
	if grown := points(); grown <= first {
		t.Errorf("chart points did not grow while the run went: %d then %d", first, grown)
	}
	if shot := os.Getenv("STAMPEDE_DASHBOARD_SHOT"); shot != "" {
		chromedp.Run(bctx, chromedp.Evaluate[bool](`(function(){var f=document.querySelector("iframe:not(.back)");var c=f&&f.contentWindow.document.getElementById("charts");if(c)c.scrollIntoView();return true})()`))
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err == nil {
			os.WriteFile(shot, png, 0o644)
		}
	}
	// The end: the page becomes the final report.
	poll("window.dash.final")
	final, err := chromedp.Run(bctx, chromedp.Evaluate[string]("window.dash.html"))
	if err != nil {
		t.Fatal(err)
	}
	state, _ := chromedp.Run(bctx, chromedp.Evaluate[string]("document.getElementById('state').textContent"))
	if out := proc.Wait(t, 60*time.Second); out.Code != 0 {
		t.Fatalf("run: %s", out)
	}
	rep := e2etest.Stampede(t, 60*time.Second, "", "report", res, "--format", "html")
	if rep.Code != 0 {
		t.Fatalf("report: %s", rep)
	}
	if final != rep.Stdout {
		t.Errorf("the dashboard's final page (%d bytes) differs from report --format html (%d bytes)", len(final), len(rep.Stdout))
	}
	if !strings.Contains(state, "final report") {
		t.Errorf("status line at the end: %q", state)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the dashboard fetched from elsewhere: %v", foreign)
	}
}
