// Draws the report's charts from STAMPEDE_CHARTS with uPlot. Each chart is
// plain data built by the Go renderer; this script only lays it out, so the
// figures a reader hovers over are the ones the report computed.
(function () {
  "use strict";
  var root = document.getElementById("charts");
  var built = [];
  window.stampede = { charts: built, ready: false };

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }
  function color(name) { return cssVar("--c-" + name) || cssVar("--fg"); }

  function trim(s) { return s.indexOf(".") < 0 ? s : s.replace(/\.?0+$/, ""); }

  // Latencies arrive in milliseconds; print them as the text report does.
  function fmtMs(v, precise) {
    if (v == null) return "–";
    if (v === 0) return "0";
    if (v >= 1000) return trim((v / 1000).toFixed(precise ? 3 : 2)) + "s";
    if (v >= 1) return trim(v.toFixed(precise ? 3 : (v >= 100 ? 0 : 1))) + "ms";
    var us = v * 1000;
    return trim(us.toFixed(us >= 10 || !precise && us >= 1 ? 0 : 1)) + "µs";
  }
  function fmtNum(v, precise) {
    if (v == null) return "–";
    var a = Math.abs(v);
    if (!precise && a >= 1e6) return trim((v / 1e6).toFixed(1)) + "M";
    if (!precise && a >= 1e4) return trim((v / 1e3).toFixed(1)) + "k";
    return trim(v.toFixed(a >= 100 || Number.isInteger(v) ? 0 : 2)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  // Monitor values, written as the tables write them (result.FormatMonitorValue).
  function fmtBytes(v, precise) {
    if (v == null) return "–";
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    if (i === 0) return fmtNum(v, precise) + " B";
    return (precise ? v.toFixed(1) : trim(v.toFixed(1))) + " " + units[i];
  }
  function fmt(unit, precise) {
    if (unit === "ms") return function (v) { return fmtMs(v, precise); };
    if (unit === "%") return function (v) { return v == null ? "–" : (precise ? v.toFixed(1) : trim(v.toFixed(Math.abs(v) >= 10 || Number.isInteger(v) ? 0 : 1))) + "%"; };
    if (unit === "B") return function (v) { return fmtBytes(v, precise); };
    if (unit === "B/s") return function (v) { return v == null ? "–" : fmtBytes(v, precise) + "/s"; };
    if (unit === "ratio") return function (v) { return v == null ? "–" : precise ? v.toFixed(3) : trim(v.toFixed(3)); };
    if (unit === "s") return function (v) { return fmtMs(v == null ? v : v * 1000, precise); };
    if (unit === "/s") return function (v) { return v == null ? "–" : fmtNum(v, precise) + (precise ? "/s" : ""); };
    return function (v) { return fmtNum(v, precise); };
  }
  function fmtTime(s) {
    if (s == null) return "–";
    // Monitors sample before the load starts, at negative run time.
    if (Math.round(s) < 0) return "-" + fmtTime(-s);
    s = Math.round(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var mm = h > 0 ? String(m).padStart(2, "0") : String(m);
    return (h > 0 ? h + ":" : "") + mm + ":" + String(sec).padStart(2, "0");
  }
  // The distribution's x is "nines": x = -log10(1 - p/100).
  function fmtNines(x) {
    if (x == null) return "–";
    var p = 100 * (1 - Math.pow(10, -x));
    // 90%, 99%, 99.9%: one more decimal for each nine past the second.
    var digits = Math.min(Math.max(Math.ceil(x - 1e-9) - 2, 0), 4);
    return p.toFixed(digits) + "%";
  }

  // Byte axes step in binary units (5 GiB, not 4.7 GiB for 5e9 bytes).
  var byteIncrs = [];
  [1, 1024, 1048576, 1073741824, 1099511627776].forEach(function (p) {
    [1, 2, 5, 10, 20, 50, 100, 200, 500].forEach(function (m) { byteIncrs.push(m * p); });
  });

  // Whole seconds only: a tick every half second would print 0:01 twice.
  var timeIncrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400];

  // card lays out a chart's frame; plots are drawn only once every card is
  // in place, so each takes the width its grid cell finally has.
  function container(spec) {
    return (spec.group && document.getElementById("charts-" + spec.group)) || root;
  }
  function card(spec) {
    var card = document.createElement("div");
    card.className = "chart";
    card.id = "chart-" + spec.id;
    var h = document.createElement("h2");
    h.textContent = spec.title;
    card.appendChild(h);
    if (spec.note) {
      var p = document.createElement("p");
      p.textContent = spec.note;
      card.appendChild(p);
    }
    var plot = document.createElement("div");
    plot.className = "plot";
    card.appendChild(plot);
    container(spec).appendChild(card);
    return plot;
  }

  function build(spec, plot) {
    if (!spec.series.length) {
      return null;
    }

    var fg = cssVar("--muted"), grid = cssVar("--grid");
    var nines = spec.x === "nines";
    var xfmt = nines ? fmtNines : fmtTime;
    var axes = [{
      stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 },
      values: function (u, vals) { return vals.map(xfmt); },
      splits: nines ? function () { return [0, 1, 2, 3, 4, 5]; } : undefined,
      incrs: nines ? undefined : timeIncrs,
      space: 60
    }];
    var scales = { x: { time: false } };
    if (spec.xrange) {
      // Every time chart spans the same seconds (the Go side's
      // shareTimeAxis). uPlot asks for the x range on zooms too, so only
      // the full data span, the initial and reset view, is widened.
      var x0 = spec.xs[0], x1 = spec.xs[spec.xs.length - 1];
      scales.x.range = function (u, min, max) {
        if (min === x0 && max === x1) return [Math.min(min, spec.xrange[0]), Math.max(max, spec.xrange[1])];
        return [min, max];
      };
    }
    spec.axes.forEach(function (a, i) {
      var key = i === 0 ? "y" : "y" + i;
      scales[key] = a.log
        ? { distr: 3, log: 10 }
        : { range: function (u, min, max) { return [min < 0 ? min * 1.08 : 0, max > 0 ? max * 1.08 : 1]; } };
      var f = fmt(a.unit, false);
      // Byte and percent labels run wider than the load charts' numbers.
      var wide = a.unit === "B" || a.unit === "B/s" || a.unit === "%" || a.unit === "ratio" || a.unit === "s";
      var ax = {
        scale: key, side: i === 0 ? 3 : 1, label: a.label, labelSize: 20, stroke: fg,
        size: wide ? function (u, vals) {
          var n = 0;
          (vals || []).forEach(function (v) { n = Math.max(n, String(v).length); });
          return Math.max(62, 30 + 7 * n);
        } : 62,
        grid: { show: i === 0, stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 },
        values: function (u, vals) { return vals.map(f); }
      };
      if (a.unit === "B" || a.unit === "B/s") ax.incrs = byteIncrs;
      axes.push(ax);
    });
    var series = [{ label: nines ? "percentile" : "time", value: function (u, v) { return xfmt(v); } }];
    spec.series.forEach(function (s) {
      var a = spec.axes[s.axis || 0];
      series.push({
        label: s.label, stroke: color(s.color), width: s.width || 1.5, dash: s.dash,
        show: !s.hide, scale: (s.axis || 0) === 0 ? "y" : "y" + s.axis,
        value: (function (f) { return function (u, v) { return f(v); }; })(fmt(a.unit, true)),
        points: { show: false }
      });
    });
    var data = [spec.xs].concat(spec.series.map(function (s) { return s.v; }));
    var opts = {
      width: Math.max(plot.clientWidth, 300), height: 270,
      series: series, axes: axes, scales: scales,
      legend: { live: true },
      // Hovering one time chart moves the cursor on the others, so a
      // latency spike can be read against throughput and users at once.
      cursor: nines ? { points: { size: 6 } } : { sync: { key: "stampede-time" }, points: { size: 6 } }
    };
    var u = new uPlot(opts, data, plot);
    u.stampedeSpec = spec;
    return u;
  }

  function paintSwatches() {
    document.querySelectorAll(".swatch[data-color]").forEach(function (el) {
      el.style.background = color(el.getAttribute("data-color"));
    });
  }

  function buildAll() {
    built.forEach(function (u) { if (u) u.destroy(); });
    built.length = 0;
    document.querySelectorAll(".charts").forEach(function (el) { el.textContent = ""; });
    var plots = STAMPEDE_CHARTS.map(card);
    STAMPEDE_CHARTS.forEach(function (spec, i) { built.push(build(spec, plots[i])); });
    paintSwatches();
    window.stampede.ready = true;
  }

  buildAll();

  function fit() {
    built.forEach(function (u) {
      if (!u) return;
      var w = Math.max(u.root.parentNode.clientWidth, 300);
      if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height: 270 });
    });
  }
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(fit, 100);
  });
  // Printing and late font loads change widths without a resize event.
  window.addEventListener("beforeprint", fit);
  // Canvas colours are fixed when drawn, so a theme switch redraws.
  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    var redraw = function () { buildAll(); };
    if (mq.addEventListener) mq.addEventListener("change", redraw);
    else if (mq.addListener) mq.addListener(redraw);
  }
})();
