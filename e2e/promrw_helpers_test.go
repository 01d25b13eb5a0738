package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// promSeries is one series of a Prometheus API answer: its labels, and
// its samples as [unix seconds, "value"] (one for an instant vector).
type promSeries struct {
	Metric map[string]string
	Value  [2]any
	Values [][2]any
}

// promAPI asks Prometheus's HTTP API path with params and returns the
// series of the answer.
func promAPI(t *testing.T, base, path string, params url.Values) []promSeries {
	t.Helper()
	resp, err := http.Get(base + path + "?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status, Error string
		Data          struct{ Result []promSeries }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("%s %v: %v %s", path, params, err, out.Error)
	}
	return out.Data.Result
}

func promTime(at time.Time) string {
	return strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
}

// promAt is an instant query at a time, the values by series.
func promAt(t *testing.T, base, q string, at time.Time) []float64 {
	t.Helper()
	var vs []float64
	for _, s := range promAPI(t, base, "/api/v1/query", url.Values{"query": {q}, "time": {promTime(at)}}) {
		v, _ := strconv.ParseFloat(s.Value[1].(string), 64)
		vs = append(vs, v)
	}
	return vs
}

// promSpan is the first and the last sample time of the series q selects
// (a range vector's samples leave stale markers out).
func promSpan(t *testing.T, base, q string) (first, last time.Time, series []promSeries) {
	t.Helper()
	series = promAPI(t, base, "/api/v1/query", url.Values{"query": {q + "[1h]"}, "time": {promTime(time.Now().Add(time.Minute))}})
	for _, s := range series {
		for _, v := range s.Values {
			at := time.UnixMilli(int64(v[0].(float64) * 1000))
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
	}
	return first, last, series
}
