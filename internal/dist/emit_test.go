package dist

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestEmitExtractRoundTrip(t *testing.T) {
	want := segResult(t, 1, 3, 500, 1000)
	var log bytes.Buffer
	log.WriteString("Plan: p\nTotal Requests: 500\n") // the summary before it
	if err := Emit(&log, want); err != nil {
		t.Fatal(err)
	}
	log.WriteString("result saved to /tmp/result.json\n")
	got, err := Extract(&log)
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Requests != 500 || got.Run.Segment != want.Run.Segment || got.Totals.LatencyOK.HDR != want.Totals.LatencyOK.HDR {
		t.Errorf("round trip changed the result: %+v", got.Run)
	}
}

// The log stream mixes stdout and stderr, and kubectl can prefix lines
// with timestamps: neither may corrupt the result.
func TestExtractSkipsNoiseAndTimestamps(t *testing.T) {
	want := segResult(t, 0, 2, 300, 50)
	var b bytes.Buffer
	Emit(&b, want)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	var noisy strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&noisy, "2026-01-02T03:04:05.%06dZ %s\n", i, l)
		switch i {
		case 3:
			noisy.WriteString("stopping: no new work starts; requests in flight get the grace period\n")
		case 4:
			noisy.WriteString("abc\n") // short base64-looking noise mid-stream
		}
	}
	got, err := Extract(strings.NewReader(noisy.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Requests != 300 {
		t.Errorf("requests %d, want 300", got.Totals.Requests)
	}
}

func TestExtractFailsLoudly(t *testing.T) {
	var b bytes.Buffer
	Emit(&b, segResult(t, 0, 2, 10, 50))
	full := b.String()
	cases := []struct {
		log  string
		want string
		why  string
	}{
		{"fake logs", "no result between the markers", "the fake clientset's fixed log body"},
		{full[:len(full)/2], "ends inside the result", "a pod cut off while printing"},
		{BeginMarker + "\n" + strings.Repeat("A", 76) + "\n" + EndMarker + "\n", "result in the log", "not gzip"},
	}
	for _, c := range cases {
		_, err := Extract(strings.NewReader(c.log))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.why, err, c.want)
		}
	}
	if _, err := Extract(strings.NewReader("x")); !errors.Is(err, ErrNoEmittedResult) {
		t.Errorf("err = %v, want ErrNoEmittedResult", err)
	}
}
