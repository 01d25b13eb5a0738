package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stampede-load/stampede/internal/result"
)

// chromiumPath finds a Chromium to drive. STAMPEDE_CHROMIUM overrides the
// search, for machines where it lives off the PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STAMPEDE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	// CI installs Debian's chromium for exactly this test, so its absence
	// there is a broken CI, not a reason to pass quietly.
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary found on PATH (CI must install Debian's chromium package); set STAMPEDE_CHROMIUM to its path")
	}
	t.Skip("skipping the headless-browser test: no chromium binary found on PATH (apt-get install chromium, or set STAMPEDE_CHROMIUM); CI=true makes this a failure")
	return ""
}

// chartCheck is what the page says about one of its charts.
type chartCheck struct {
	ID     string `json:"id"`
	Empty  bool   `json:"empty"`
	Series int    `json:"series"`
	Shown  int    `json:"shown"`
	Points int    `json:"points"`
	Drawn  int    `json:"drawn"`
	// Inked counts shown series whose colour appears on the canvas in at
	// least a line's worth of pixels: proof the line was drawn, not just
	// the axes.
	Inked  int      `json:"inked"`
	Width  int      `json:"w"`
	Height int      `json:"h"`
	Colors []string `json:"colors"`
	// XMin and XMax are the x scale as first drawn; Zoom the scale after
	// zoomJS zoomed into a chart whose axis is widened to the others'.
	XMin float64   `json:"xmin"`
	XMax float64   `json:"xmax"`
	Time bool      `json:"time"`
	Zoom []float64 `json:"zoom"`
}

type pageCheck struct {
	Ready    bool         `json:"ready"`
	Charts   []chartCheck `json:"charts"`
	Theme    string       `json:"theme"`
	Verdict  string       `json:"verdict"`
	BodyText int          `json:"bodyText"`
	// Headline is the per-level headline table of a multi-level run as
	// rendered (cell text by row), empty when the page has none or it
	// is not displayed.
	Headline [][]string `json:"headline"`
}

const checkJS = `(() => {
  const s = window.stampede;
  if (!s || !s.ready) return {ready: false, charts: []};
  const css = getComputedStyle(document.documentElement);
  const rgb = hex => { const m = /^#([0-9a-f]{6})$/i.exec(hex.trim()); if (!m) return null;
    const n = parseInt(m[1], 16); return [n >> 16, (n >> 8) & 255, n & 255]; };
  const charts = s.charts.map((u, i) => {
    const spec = STAMPEDE_CHARTS[i];
    if (!u) return {id: spec.id, empty: true, series: spec.series.length};
    const c = u.ctx.canvas;
    const img = u.ctx.getImageData(0, 0, c.width, c.height).data;
    let shown = 0, points = 0, drawn = 0, inked = 0; const colors = [];
    for (let k = 1; k < u.series.length; k++) {
      const ser = u.series[k];
      if (!ser.show) continue;
      shown++;
      points += u.data[k].filter(v => v != null).length;
      if (ser._paths) drawn++;
      const hex = css.getPropertyValue('--c-' + spec.series[k - 1].color);
      colors.push(hex.trim());
      const want = rgb(hex);
      if (!want) continue;
      let hits = 0;
      for (let p = 0; p < img.length; p += 4) {
        if (img[p + 3] > 200 && Math.abs(img[p] - want[0]) < 24 && Math.abs(img[p + 1] - want[1]) < 24 && Math.abs(img[p + 2] - want[2]) < 24) hits++;
      }
      if (hits >= 20) inked++;
    }
    let xmin = u.scales.x.min, xmax = u.scales.x.max, zoom = null;
    if (u.stampedeInit) {
      zoom = [xmin, xmax];
      [xmin, xmax] = u.stampedeInit;
      u.setScale('x', {min: spec.xs[0], max: spec.xs[spec.xs.length - 1]});
    }
    return {id: spec.id, series: u.series.length - 1, shown, points, drawn, inked, w: c.width, h: c.height, colors,
            xmin, xmax, time: spec.x === 'time', zoom};
  });
  const v = document.getElementById('verdict');
  const hl = document.querySelector('#headline table');
  const headline = hl && hl.offsetHeight > 0 ? [...hl.rows].map(r => [...r.cells].map(c => c.innerText.trim())) : [];
  return {ready: true, charts, theme: css.getPropertyValue('--bg').trim(),
          verdict: v ? v.textContent : '', bodyText: document.body.innerText.length, headline};
})()`

// zoomJS zooms each chart whose x axis is widened to the other charts'
// span into its own data, as a drag would; checkJS reads the result and
// zooms back out. uPlot consults the widened range on zooms too, so this
// proves a zoom still narrows the axis.
const zoomJS = `(() => {
  window.stampede.charts.forEach((u, i) => {
    const spec = STAMPEDE_CHARTS[i];
    if (!u || !spec.xrange || spec.xs.length < 4) return;
    u.stampedeInit = [u.scales.x.min, u.scales.x.max];
    u.setScale('x', {min: spec.xs[1], max: spec.xs[spec.xs.length - 2]});
  });
  return true;
})()`

var browserMu sync.Mutex

// openInChromium loads a report from disk in headless Chromium, fails the
// test on any console error, exception or network request, checks that
// every chart drew its data, and saves a full-page screenshot.
func openInChromium(t *testing.T, page string, dark bool, shot string) pageCheck {
	t.Helper()
	exe := chromiumPath(t)
	browserMu.Lock()
	defer browserMu.Unlock()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI containers run as root, where Chromium's sandbox cannot start
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	var mu sync.Mutex
	var problems []string
	report := func(format string, a ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	if err := chromedp.Listen(bctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				report("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			report("uncaught exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				report("browser log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "about:") {
				report("the page made a network request to %s; reports must work offline", u)
			}
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	// Media emulation must be in place before the page loads: the script
	// reads the theme's colours when it draws.
	setScheme := chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return chromedp.Void{}, err
	})
	if err := chromedp.Do(bctx, setScheme, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("file://"+abs)); err != nil {
		t.Fatalf("chromium: open %s: %v", page, err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool]("!!(window.stampede && window.stampede.ready)", chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("chromium: %s: charts never finished building: %v\npage problems: %s", page, err, strings.Join(problems, "\n"))
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](zoomJS)); err != nil {
		t.Fatalf("chromium: zoom %s: %v", page, err)
	}
	// Let a frame pass so uPlot's first paint is on the canvas.
	if err := chromedp.Do(bctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	raw, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](checkJS))
	if err != nil {
		t.Fatalf("chromium: check %s: %v", page, err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: screenshot %s: %v", page, err)
	}
	if shot != "" {
		dst := filepath.Join(testOutput(t), shot)
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", dst)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("%s (%s): %s", filepath.Base(page), scheme, p)
	}
	var pc pageCheck
	if err := json.Unmarshal(raw, &pc); err != nil {
		t.Fatalf("page check: %v (%s)", err, raw)
	}
	if !pc.Ready {
		t.Fatalf("%s: charts never finished building", page)
	}
	return pc
}

// requireCharts checks that each wanted chart exists and drew lines with
// data points.
func requireCharts(t *testing.T, pc pageCheck, ids ...string) {
	t.Helper()
	byID := map[string]chartCheck{}
	for _, c := range pc.Charts {
		byID[c.ID] = c
	}
	for _, id := range ids {
		c, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("chart %q missing; page has %v", id, pc.Charts)
		case c.Empty:
			t.Errorf("chart %q has no series", id)
		case c.Width < 300 || c.Height < 100:
			t.Errorf("chart %q canvas is %dx%d", id, c.Width, c.Height)
		case c.Shown == 0 || c.Points < 2*c.Shown:
			t.Errorf("chart %q: %d shown series with %d data points; want data in every line", id, c.Shown, c.Points)
		case c.Drawn != c.Shown:
			t.Errorf("chart %q: %d of %d shown series built paths", id, c.Drawn, c.Shown)
		case c.Inked == 0:
			t.Errorf("chart %q: none of its line colours %v is on the canvas", id, c.Colors)
		}
	}
	if len(pc.Charts) != len(ids) {
		t.Errorf("page has %d charts, want %d (%v)", len(pc.Charts), len(ids), ids)
	}
}

var runCharts = []string{"rps", "latency", "users", "generator", "distribution"}

func TestReportHTMLInChromium(t *testing.T) {
	chromiumPath(t)
	healthy, slow, open := allRuns(t)
	dir := t.TempDir()
	for _, c := range []struct {
		in, name string
	}{
		{healthy, "report-healthy"},
		{slow, "report-slow"},
		{open, "report-open"},
	} {
		page := filepath.Join(dir, c.name+".html")
		if o := stampede(t, "report", c.in, "--format", "html", "-o", page); o.Code != 0 {
			t.Fatalf("report --format html: exit %d: %s", o.Code, o.Stderr)
		}
		light := openInChromium(t, page, false, c.name+"-light.png")
		requireCharts(t, light, runCharts...)
		dark := openInChromium(t, page, true, c.name+"-dark.png")
		requireCharts(t, dark, runCharts...)
		if light.Theme == dark.Theme {
			t.Errorf("%s: same background %q in light and dark mode", c.name, light.Theme)
		}
		if light.BodyText < 500 {
			t.Errorf("%s: page has only %d characters of text", c.name, light.BodyText)
		}
	}
}

func TestCompareHTMLInChromium(t *testing.T) {
	chromiumPath(t)
	healthy, slow := realRuns(t)
	page := filepath.Join(t.TempDir(), "compare.html")
	if o := stampede(t, "compare", healthy, slow, "--labels", "before,after", "--format", "html", "-o", page); o.Code != 0 {
		t.Fatalf("compare --format html: exit %d: %s", o.Code, o.Stderr)
	}
	ids := []string{"cmp-ok", "cmp-failed", "cmp-latency", "cmp-users", "cmp-distribution"}
	requireCharts(t, openInChromium(t, page, false, "compare-light.png"), ids...)
	requireCharts(t, openInChromium(t, page, true, "compare-dark.png"), ids...)
}

// A run that sent nothing (target down at start, say) still renders: empty
// charts, no script errors.
func TestEmptyRunHTMLInChromium(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	r := &result.Result{Schema: result.Schema, Plan: result.PlanInfo{Name: "nothing"},
		Run:    result.RunInfo{Model: "open", LatencyFrom: "intended", Segment: result.Segment{Count: 1}},
		Totals: result.Totals{ByClass: map[string]int64{}}}
	if err := result.Write(empty, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "empty.html")
	if o := stampede(t, "report", empty, "--format", "html", "-o", page); o.Code != 0 {
		t.Fatalf("exit %d: %s", o.Code, o.Stderr)
	}
	pc := openInChromium(t, page, false, "")
	if len(pc.Charts) != len(runCharts) {
		t.Errorf("%d charts, want %d", len(pc.Charts), len(runCharts))
	}
}

// A run with SignalR connections and the host monitor: the page has the
// connections table and chart, the server table and one chart per monitor
// unit, all drawn, every time chart on one time axis, and a zoom into a
// widened chart still narrows it.
func TestConnectionsAndMonitorsHTMLInChromium(t *testing.T) {
	chromiumPath(t)
	in := connsRun(t)
	r, err := result.Read(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Connections == nil || len(r.Series.Connections) == 0 || len(r.Monitors) == 0 {
		t.Fatalf("the run recorded no connections or monitors: connections %+v, %d monitor series", r.Connections, len(r.Monitors))
	}
	page := filepath.Join(t.TempDir(), "conns.html")
	if o := stampede(t, "report", in, "--format", "html", "-o", page); o.Code != 0 {
		t.Fatalf("report --format html: exit %d: %s", o.Code, o.Stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	sc := r.Connections.Scenarios[0]
	for _, want := range []string{
		`<section class="card" id="connections">`,
		"<th>kitchen-display</th><td class=\"text\">signalr</td>",
		fmt.Sprintf("<td>%d of %d</td>", sc.PeakOpen, sc.Target),
		fmt.Sprintf("OrderPlaced %d", sc.Pushes["OrderPlaced"]),
		`<section class="card" id="server">`,
		`<tr class="section"><th colspan="4">host</th></tr>`,
		"<th>cpu.busy_pct</th>",
	} {
		if !strings.Contains(string(html), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, dark := range []bool{false, true} {
		shot := "report-conns-light.png"
		if dark {
			shot = "report-conns-dark.png"
		}
		pc := openInChromium(t, page, dark, shot)
		var ids []string
		mon := map[string]bool{}
		for _, c := range pc.Charts {
			ids = append(ids, c.ID)
			if strings.HasPrefix(c.ID, "mon-host-") {
				mon[c.ID] = true
			}
		}
		want := []string{"rps", "latency", "users", "generator", "connections", "distribution"}
		if len(ids) < len(want) || strings.Join(ids[:len(want)], ",") != strings.Join(want, ",") {
			t.Errorf("charts %v, want %v first", ids, want)
		}
		for _, id := range []string{"mon-host-percent", "mon-host-count", "mon-host-bytes"} {
			if !mon[id] {
				t.Errorf("no chart %s; monitor charts %v", id, mon)
			}
		}
		requireCharts(t, pc, ids...)
		var x0, x1 float64
		first := true
		for _, c := range pc.Charts {
			if !c.Time {
				continue
			}
			if first {
				x0, x1, first = c.XMin, c.XMax, false
				if x0 >= 0 {
					t.Errorf("time axis starts at %v; the host monitor samples before the load starts", x0)
				}
			} else if c.XMin != x0 || c.XMax != x1 {
				t.Errorf("chart %s spans %v..%v, others %v..%v; time charts must share one axis", c.ID, c.XMin, c.XMax, x0, x1)
			}
			if c.Zoom == nil || c.Zoom[0] <= c.XMin || c.Zoom[1] >= c.XMax {
				t.Errorf("chart %s: zoom from %v..%v gave %v; want a narrower axis", c.ID, c.XMin, c.XMax, c.Zoom)
			}
		}
	}
}
