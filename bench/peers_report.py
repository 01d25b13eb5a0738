#!/usr/bin/env python3
"""Parsing and tables for peers.sh.

  peers_report.py record ...      one run -> one JSON line on stdout
  peers_report.py brief < line    one-line summary of a record
  peers_report.py table FILE      median tables (markdown) for every test

Latencies are stored in milliseconds, CPU in seconds, memory in MiB.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

UNIT_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def dur_ms(num, unit):
    return float(num) * UNIT_MS[unit]


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_json(text):
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    start = text.find("{")  # tolerate a banner before the JSON object
    if start >= 0:
        try:
            return json.loads(text[start:])
        except ValueError:
            return None
    return None


# ------------------------------------------------------------------ parsers --
def p_wrk(out, _extra):
    r = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+),", out)
    if m:
        r["requests"] = int(m.group(1))
    # wrk: "     50%  684.00us"; wrk2: " 50.000%    1.21ms"
    for pct, key in (("50", "p50"), ("90", "p90"), ("99", "p99"), ("100", "max")):
        m = re.search(r"^\s+" + pct + r"(?:\.000)?%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        if m:
            r[key + "_ms"] = dur_ms(m.group(1), m.group(2))
    if "max_ms" not in r:
        m = re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s|m)\s", out)
        if m:
            r["max_ms"] = dur_ms(m.group(1), m.group(2))
    errs = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errs += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    r["errors"] = errs
    return r


def p_hey(out, _extra):
    r = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    for pct in ("50", "90", "99"):
        m = re.search(r"^\s+" + pct + r"% in ([\d.]+) secs", out, re.M)
        if m:
            r["p%s_ms" % pct] = float(m.group(1)) * 1e3
    m = re.search(r"Slowest:\s+([\d.]+) secs", out)
    if m:
        r["max_ms"] = float(m.group(1)) * 1e3
    ok = non2xx = 0
    sc = out.split("Status code distribution:")[-1] if "Status code distribution:" in out else ""
    sc = sc.split("Error distribution:")[0]
    for code, n in re.findall(r"\[(\d+)\]\s+(\d+) responses", sc):
        if code.startswith("2"):
            ok += int(n)
        else:
            non2xx += int(n)
    errs = 0
    if "Error distribution:" in out:
        for n in re.findall(r"^\s+\[(\d+)\]\s", out.split("Error distribution:")[1], re.M):
            errs += int(n)
    r.update(requests=ok + non2xx + errs, errors=errs, non2xx=non2xx)
    return r


def p_ab(out, _extra):
    r = {}
    m = re.search(r"Requests per second:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"Complete requests:\s+(\d+)", out)
    if m:
        r["requests"] = int(m.group(1))
    m = re.search(r"Failed requests:\s+(\d+)", out)
    r["errors"] = int(m.group(1)) if m else 0
    m = re.search(r"Non-2xx responses:\s+(\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    for pct in ("50", "90", "99"):
        m = re.search(r"^\s+" + pct + r"%\s+(\d+)\s*$", out, re.M)
        if m:
            r["p%s_ms" % pct] = float(m.group(1))
    m = re.search(r"100%\s+(\d+) \(longest", out)
    if m:
        r["max_ms"] = float(m.group(1))
    return r


def p_siege(out, _extra):
    d = load_json(out) or {}
    r = {}
    if "transaction_rate" in d:
        r["rps"] = float(d["transaction_rate"])
        r["requests"] = int(d.get("transactions", 0)) + int(d.get("failed_transactions", 0))
        r["errors"] = int(d.get("failed_transactions", 0))
        r["max_ms"] = float(d.get("longest_transaction", 0)) * 1e3
    return r


def p_h2load(out, _extra):
    r = {}
    m = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", out)
    if m:
        r["rps"] = float(m.group(2))
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    if m:
        g = [int(x) for x in m.groups()]
        r["requests"] = g[2]
        r["errors"] = g[4] + g[5] + g[6]
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if m:
        r["non2xx"] = sum(int(x) for x in m.groups()[1:])
    m = re.search(r"time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)", out)
    if m:
        r["max_ms"] = dur_ms(m.group(3), m.group(4))
        r["mean_ms"] = dur_ms(m.group(5), m.group(6))
    return r


def p_locust(out, extra):
    import csv
    r = {}
    text = read(extra)
    for row in csv.DictReader(text.splitlines()):
        if row.get("Name") != "Aggregated":
            continue

        def num(k):
            v = row.get(k, "N/A")
            return None if v in ("N/A", "", None) else float(v)

        r["requests"] = int(num("Request Count") or 0)
        r["errors"] = int(num("Failure Count") or 0)
        r["rps"] = num("Requests/s")
        r["p50_ms"], r["p90_ms"], r["p99_ms"] = num("50%"), num("90%"), num("99%")
        r["max_ms"] = num("Max Response Time")
    return r


def p_oha(out, _extra):
    d = load_json(out) or {}
    r = {}
    s = d.get("summary", {})
    if s:
        r["rps"] = s.get("requestsPerSec")
    lp = d.get("latencyPercentiles", {})
    for k in ("p50", "p90", "p99"):
        if lp.get(k) is not None:
            r[k + "_ms"] = lp[k] * 1e3
    if s.get("slowest") is not None:
        r["max_ms"] = s["slowest"] * 1e3
    codes = d.get("statusCodeDistribution", {}) or {}
    # requests still in flight at the deadline are aborted by oha; not errors
    errs = sum(v for k, v in (d.get("errorDistribution", {}) or {}).items()
               if "deadline" not in k)
    ok = sum(v for k, v in codes.items() if str(k).startswith("2"))
    non2xx = sum(v for k, v in codes.items() if not str(k).startswith("2"))
    r.update(requests=ok + non2xx + errs, errors=errs, non2xx=non2xx)
    if d.get("errorDistribution"):
        r["error_kinds"] = d["errorDistribution"]
    return r


def p_autocannon(out, _extra):
    d = load_json(out) or {}
    r = {}
    if "requests" in d:
        dur = d.get("duration") or 0
        r["requests"] = d["requests"].get("total")
        r["rps"] = (r["requests"] / dur) if dur else d["requests"].get("average")
        lat = d.get("latency", {})
        r["p50_ms"], r["p90_ms"], r["p99_ms"], r["max_ms"] = (
            lat.get("p50"), lat.get("p90"), lat.get("p99"), lat.get("max"))
        r["errors"] = int(d.get("errors", 0)) + int(d.get("timeouts", 0))
        r["non2xx"] = int(d.get("non2xx", 0))
    return r


def p_k6(out, extra):
    d = load_json(read(extra)) or {}
    m = d.get("metrics", {})
    r = {}

    def val(metric, key):
        return (m.get(metric, {}).get("values", {}) or {}).get(key)

    r["requests"] = val("http_reqs", "count")
    r["rps"] = val("http_reqs", "rate")
    r["p50_ms"] = val("http_req_duration", "med")
    r["p90_ms"] = val("http_req_duration", "p(90)")
    r["p99_ms"] = val("http_req_duration", "p(99)")
    r["max_ms"] = val("http_req_duration", "max")
    r["errors"] = val("http_req_failed", "passes") or 0
    dropped = val("dropped_iterations", "count")
    if dropped:
        r["dropped"] = dropped
    r["vus_max"] = val("vus_max", "max")
    return r


def p_vegeta(out, extra):
    d = load_json(read(extra)) or {}
    r = {}
    if "latencies" in d:
        lat = d["latencies"]
        r["p50_ms"] = lat["50th"] / 1e6
        r["p90_ms"] = lat["90th"] / 1e6
        r["p99_ms"] = lat["99th"] / 1e6
        r["max_ms"] = lat["max"] / 1e6
        r["requests"] = d.get("requests")
        r["rps"] = d.get("throughput")
        r["rate_sent"] = d.get("rate")
        codes = d.get("status_codes", {}) or {}
        r["errors"] = int(codes.get("0", 0))
        r["non2xx"] = sum(v for k, v in codes.items() if k != "0" and not k.startswith("2"))
        if d.get("errors"):
            r["error_kinds"] = d["errors"][:5]
    return r


def p_fortio(out, extra):
    d = load_json(read(extra)) or {}
    r = {}
    h = d.get("DurationHistogram")
    if h:
        r["requests"] = h.get("Count")
        r["rps"] = d.get("ActualQPS")
        for p in h.get("Percentiles") or []:
            key = {50: "p50_ms", 90: "p90_ms", 99: "p99_ms"}.get(int(p["Percentile"]))
            if key:
                r[key] = p["Value"] * 1e3
        r["max_ms"] = h.get("Max", 0) * 1e3
        codes = d.get("RetCodes", {}) or {}
        r["errors"] = int(codes.get("-1", 0))
        r["non2xx"] = sum(v for k, v in codes.items() if k not in ("-1", "200"))
    return r


def _find_key(obj, names):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k.lower() in names and isinstance(v, (int, float)):
                return v
        for v in obj.values():
            got = _find_key(v, names)
            if got is not None:
                return got
    return None


def p_auto(out, extra):
    """Generic: wrk/hey-like text, or JSON with rps/p50/p90/p99/max keys."""
    d = load_json(out)
    if isinstance(d, dict):
        r = {}
        r["rps"] = _find_key(d, {"rps", "requests_per_sec", "requestspersec", "throughput", "qps"})
        r["requests"] = _find_key(d, {"requests", "total", "count"})
        r["errors"] = _find_key(d, {"errors", "error_count"}) or 0
        unit = 1.0  # JSON durations: *_ms keys in ms, *_s in s, bare in ms
        for k in ("p50", "p90", "p99", "max"):
            for suffix, mult in (("_ms", 1.0), ("_s", 1e3), ("_us", 1e-3), ("_ns", 1e-6), ("", unit)):
                v = _find_key(d, {k + suffix})
                if v is not None:
                    r[k + "_ms"] = v * mult
                    break
        return r
    for parser in (p_wrk, p_hey):
        r = parser(out, extra)
        if r.get("rps") and r.get("p99_ms") is not None:
            return r
    r = {}
    # vegeta-style text: "Latencies  [min, mean, 50, 90, 95, 99, max]  1ms, 2ms, ..."
    for name, keys, vals in re.findall(r"^(\w+)\s+\[([^\]]+)\]\s+(.+)$", out, re.M):
        pairs = dict(zip([k.strip() for k in keys.split(",")], [v.strip() for v in vals.split(",")]))
        if name.lower().startswith("latenc"):
            for k, key in (("50", "p50_ms"), ("90", "p90_ms"), ("99", "p99_ms"), ("max", "max_ms")):
                m = re.match(r"([\d.]+)(ns|µs|us|ms|s)$", pairs.get(k, ""))
                if m:
                    r[key] = dur_ms(m.group(1), m.group(2))
        elif name.lower() == "requests":
            if pairs.get("total", "").isdigit():
                r["requests"] = int(pairs["total"])
            try:
                r["rps"] = float(pairs.get("throughput") or pairs.get("rate"))
            except (TypeError, ValueError):
                pass
    if r.get("p99_ms") is not None:
        r.setdefault("errors", 0)
        return r
    m = re.search(r"(?i)(?:requests/s(?:ec)?|req/s|rps|qps)\s*[:=]?\s*([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"(?i)\brequests\s*[:=]\s*(\d+)", out)
    if m:
        r["requests"] = int(m.group(1))
    for k in ("50", "90", "99"):
        m = re.search(r"(?i)\b(?:p" + k + r"|" + k + r"(?:th|%))\s*[:=]?\s*([\d.]+)\s*(ns|us|µs|ms|s)\b", out)
        if m:
            r["p%s_ms" % k] = dur_ms(m.group(1), m.group(2))
    m = re.search(r"(?i)\bmax\w*\s*[:=]?\s*([\d.]+)\s*(ns|us|µs|ms|s)\b", out)
    if m:
        r["max_ms"] = dur_ms(m.group(1), m.group(2))
    m = re.search(r"(?i)\berrors?\s*[:=]\s*(\d+)", out)
    r["errors"] = int(m.group(1)) if m else 0
    return r


PARSERS = {
    "wrk": p_wrk, "wrk2": p_wrk, "hey": p_hey, "ab": p_ab, "siege": p_siege,
    "h2load": p_h2load, "locust": p_locust, "oha": p_oha, "autocannon": p_autocannon,
    "k6": p_k6, "vegeta": p_vegeta, "fortio": p_fortio, "auto": p_auto,
}


def parse_time(text):
    r = {}
    pats = {
        "user_s": r"User time \(seconds\): ([\d.]+)",
        "sys_s": r"System time \(seconds\): ([\d.]+)",
        "maxrss_kb": r"Maximum resident set size \(kbytes\): (\d+)",
    }
    for k, p in pats.items():
        m = re.search(p, text)
        if m:
            r[k] = float(m.group(1))
    return r


def cpustat(s):
    out = {}
    for part in s.split():
        name, busy, steal = part.split(":")
        out[name] = (int(busy), int(steal))
    return out


def cmd_record(a):
    rundir = a.rundir
    out = read(os.path.join(rundir, "stdout.txt"))
    rec = {"test": a.test, "tool": a.tool, "rep": a.rep, "rc": a.rc, "secs": a.secs,
           "conns": a.conns, "rate": a.rate, "wall_s": a.wall, "pinned": a.pinned,
           "rundir": os.path.basename(rundir)}
    try:
        rec.update(PARSERS[a.parser](out, a.extra))
    except Exception as e:  # keep the run, flag the parse failure
        rec["parse_error"] = repr(e)
    t = parse_time(read(os.path.join(rundir, "time.txt")))
    if "user_s" in t:
        rec["cpu_s"] = t["user_s"] + t["sys_s"]
        rec["user_s"], rec["sys_s"] = t["user_s"], t["sys_s"]
        rec["maxrss_mb"] = t["maxrss_kb"] / 1024.0
    if a.nginx_req and a.nginx_req[0] and a.nginx_req[1]:
        rec["nginx_requests"] = int(a.nginx_req[1]) - int(a.nginx_req[0])
        rec["rps_nginx"] = rec["nginx_requests"] / a.secs
    if a.nginx_cpu_ns and a.nginx_cpu_ns[0] and a.nginx_cpu_ns[1]:
        rec["nginx_cpu_s"] = (int(a.nginx_cpu_ns[1]) - int(a.nginx_cpu_ns[0])) / 1e9
        rec["nginx_util"] = rec["nginx_cpu_s"] / a.secs
    reqs = rec.get("nginx_requests") or rec.get("requests")
    if reqs and rec.get("cpu_s") is not None:
        rec["cpu_us_per_req"] = rec["cpu_s"] * 1e6 / reqs
    if a.cpustat:
        s0, s1 = cpustat(a.cpustat[0]), cpustat(a.cpustat[1])
        hz = os.sysconf("SC_CLK_TCK")
        busy = sum((s1[c][0] - s1[c][1]) - (s0[c][0] - s0[c][1]) for c in s0 if c in s1) / hz
        steal = sum(s1[c][1] - s0[c][1] for c in s0 if c in s1) / hz
        if a.target_cpu_ns:  # the stall server (test 5): started just before the run
            rec["target_cpu_s"] = int(a.target_cpu_ns) / 1e9
        if a.kernel_cpu_ns:
            rec["ksoftirqd_cpu_s"] = int(a.kernel_cpu_ns) / 1e9
        ours = ((rec.get("cpu_s") or 0) + (rec.get("nginx_cpu_s") or 0)
                + (rec.get("target_cpu_s") or 0) + (rec.get("ksoftirqd_cpu_s") or 0))
        rec["machine_busy_s"] = busy
        rec["other_cpu_s"] = max(0.0, busy - ours)
        rec["steal_s"] = steal
        ncpu = len(s0)
        rec["contaminated"] = rec["other_cpu_s"] > a.max_other_frac * ncpu * a.wall
    peak = read(os.path.join(rundir, "peak_conns")).strip()
    if peak:
        rec["peak_conns"] = int(peak) - 1  # minus the stub_status request itself
    if a.stall:
        try:
            rec["stall"] = json.loads(a.stall)
        except ValueError:
            pass
    print(json.dumps(rec, sort_keys=True))


def cmd_brief(_a):
    r = json.loads(sys.stdin.readline())
    keys = ["rps", "rps_nginx", "cpu_s", "cpu_us_per_req", "maxrss_mb", "nginx_util",
            "other_cpu_s", "peak_conns", "errors", "p50_ms", "p90_ms", "p99_ms", "max_ms"]
    parts = []
    for k in keys:
        v = r.get(k)
        if v is not None:
            parts.append("%s=%s" % (k, fmt(v)))
    if r.get("parse_error"):
        parts.append("PARSE_ERROR")
    print(" ".join(parts))


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if abs(v) >= 1000:
            return "%.0f" % v
        if abs(v) >= 100:
            return "%.1f" % v
        return ("%." + str(digits) + "g") % v
    return str(v)


def median(rows, key):
    vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.median(vals) if vals else None


def group(rows, test):
    """tool -> runs used for the medians: clean (not contaminated) runs that
    exited 0, where the tool has any; else whatever it has."""
    g = {}
    for r in rows:
        if r["test"] == test:
            g.setdefault(r["tool"], []).append(r)
    for tool, rs in g.items():
        good = [r for r in rs if not r.get("contaminated") and r.get("rc") == 0]
        ok = [r for r in rs if r.get("rc") == 0]
        used = good or ok or rs
        for r in used:
            r["_failed_elsewhere"] = sum(1 for x in rs if x.get("rc") != 0)
        g[tool] = used
    return g


def nruns(rs):
    note = []
    if any(r.get("contaminated") for r in rs):
        note.append("machine busy")
    failed = rs[0].get("_failed_elsewhere", 0) if rs else 0
    if failed:
        note.append("+%d failed" % failed)
    return "%d%s" % (len(rs), (" (" + ", ".join(note) + ")") if note else "")


def table(headers, body):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def expected_open_model(period_s, stall_s, secs, offset_s=0.0):
    """Latency percentiles a correct open-model generator should report.

    Requests are sent uniformly over [offset, offset+secs] on the server's
    clock; one sent at t inside a stall [k*period+period-stall, (k+1)*period)
    waits until the stall ends. Service time is taken as 0.
    """
    n = 200000
    lat = []
    for i in range(n):
        t = offset_s + secs * (i + 0.5) / n
        phase = t % period_s
        lat.append(period_s - phase if phase >= period_s - stall_s else 0.0)
    lat.sort()

    def q(p):
        return lat[min(n - 1, int(math.ceil(p * n)) - 1)] * 1e3

    stalled = sum(1 for x in lat if x > 0) / n
    return {"p50_ms": q(0.50), "p90_ms": q(0.90), "p99_ms": q(0.99), "max_ms": lat[-1] * 1e3,
            "stalled_frac": stalled}


def cmd_table(a):
    rows = [json.loads(l) for l in open(a.file) if l.strip()]
    tests = sorted({r["test"] for r in rows})
    for test in ("test3", "test3u"):
        if test not in tests:
            continue
        g = group(rows, test)
        title = {"test3": "Test 3: throughput/efficiency (nginx on CPU 0, generator on CPU 1)",
                 "test3u": "Test 3u: unpinned (default threads)"}[test]
        print("\n### %s — medians\n" % title)
        body = []
        # Ratios to wrk from the same run: the machine is noisy, so only
        # figures taken side by side compare.
        wrk = g.get("wrk")
        wrk_rps = median(wrk, "rps_nginx") if wrk else None
        wrk_cpu = median(wrk, "cpu_us_per_req") if wrk else None
        for tool, rs in sorted(g.items(), key=lambda kv: -(median(kv[1], "rps_nginx") or 0)):
            rps_n, cpu = median(rs, "rps_nginx"), median(rs, "cpu_us_per_req")
            body.append([tool, nruns(rs), fmt(median(rs, "rps")), fmt(rps_n),
                         (fmt(rps_n / wrk_rps) + "×") if wrk_rps and rps_n else "-",
                         fmt(median(rs, "cpu_s")), fmt(cpu),
                         (fmt(cpu / wrk_cpu) + "×") if wrk_cpu and cpu else "-",
                         fmt(median(rs, "maxrss_mb")),
                         fmt((median(rs, "nginx_util") or 0) * 100) + "%",
                         fmt(median(rs, "other_cpu_s")),
                         fmt(median(rs, "errors"))])
        print(table(["tool", "runs", "req/s (tool)", "req/s (nginx count)", "req/s ÷ wrk", "gen CPU s", "CPU µs/req",
                     "CPU/req ÷ wrk", "peak RSS MiB", "nginx core busy", "other CPU s", "errors"], body))
    if "test4" in tests:
        g = group(rows, "test4")
        print("\n### Test 4: connection scale — medians\n")
        body = []
        for tool, rs in sorted(g.items()):
            asked = median(rs, "rate")
            body.append([tool, nruns(rs), "%s @ %s" % (fmt(median(rs, "conns")), fmt(asked) if asked else "max"),
                         fmt(median(rs, "peak_conns")), fmt(median(rs, "rps")),
                         fmt(median(rs, "rps_nginx")), fmt(median(rs, "p50_ms")),
                         fmt(median(rs, "p99_ms")), fmt(median(rs, "maxrss_mb")),
                         fmt(median(rs, "cpu_s")), fmt(median(rs, "errors")),
                         ",".join(sorted({str(r["rc"]) for r in rs}))])
        print(table(["tool", "runs", "conns @ req/s asked", "peak conns at nginx", "req/s (tool)",
                     "req/s (nginx count)", "p50 ms", "p99 ms", "peak RSS MiB", "gen CPU s",
                     "errors", "exit codes"], body))
    if "test5" in tests:
        g = group(rows, "test5")
        any_rec = max((r for r in rows if r["test"] == "test5"), key=lambda r: r["rate"])
        st = any_rec.get("stall") or {}
        exp = expected_open_model(st.get("period_s", 5), st.get("stall_s", 1), any_rec["secs"])
        print("\n### Test 5: coordinated omission (stall server, %g req/s asked, %g s) — medians\n"
              % (any_rec["rate"], any_rec["secs"]))
        body = [["expected (open model)", "-", "~0 (service time)", fmt(exp["p90_ms"]),
                 fmt(exp["p99_ms"]), fmt(exp["max_ms"]), fmt(float(any_rec["rate"])),
                 fmt(exp["stalled_frac"] * 100) + "%"]]
        for tool, rs in sorted(g.items()):
            frac = [r["stall"]["stalled_arrivals"] / r["stall"]["requests"] for r in rs
                    if r.get("stall", {}).get("requests")]
            sent = [r["stall"]["requests"] / r["secs"] for r in rs if r.get("stall", {}).get("requests")]
            body.append([tool, nruns(rs), fmt(median(rs, "p50_ms")), fmt(median(rs, "p90_ms")),
                         fmt(median(rs, "p99_ms")), fmt(median(rs, "max_ms")),
                         fmt(statistics.median(sent)) if sent else "-",
                         (fmt(statistics.median(frac) * 100) + "%") if frac else "-",
                         fmt(median(rs, "dropped"))])
        body[0].append("0")
        print(table(["tool", "runs", "p50 ms", "p90 ms", "p99 ms", "max ms", "req/s seen by server",
                     "arrivals in stall", "dropped"], body))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--test", required=True)
    r.add_argument("--tool", required=True)
    r.add_argument("--rep", type=int, required=True)
    r.add_argument("--rc", type=int, default=0)
    r.add_argument("--parser", required=True)
    r.add_argument("--rundir", required=True)
    r.add_argument("--extra", default="")
    r.add_argument("--secs", type=float, required=True)
    r.add_argument("--conns", type=int, required=True)
    r.add_argument("--rate", type=float, required=True)
    r.add_argument("--wall", type=float, required=True)
    r.add_argument("--nginx-req", nargs=2, default=None)
    r.add_argument("--nginx-cpu-ns", nargs=2, default=None)
    r.add_argument("--cpustat", nargs=2, default=None)
    r.add_argument("--stall", default="")
    r.add_argument("--pinned", default="")
    r.add_argument("--max-other-frac", type=float, default=0.05)
    r.add_argument("--target-cpu-ns", default="")
    r.add_argument("--kernel-cpu-ns", default="")
    sub.add_parser("brief")
    t = sub.add_parser("table")
    t.add_argument("file")
    a = ap.parse_args()
    {"record": cmd_record, "brief": cmd_brief, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
