package dist

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// MergeFailures writes the failure samples of several segments
// (--keep-failures in each, metrics.FailureLog) to dst as one file: the
// earliest perStep of each step across the segments, in time order, so the
// whole test keeps what one process would have kept, not perStep per
// segment. A segment that wrote no file (it failed nothing, or did not
// run) adds nothing; with no sample at all there is no dst. Samples are
// told apart by (phase, step_index): the setup's and teardown's steps are
// numbered apart from the load's. It returns how many samples dst holds.
func MergeFailures(dst string, srcs []string, perStep int) (int64, error) {
	var lines []failureLine
	for _, src := range srcs {
		more, err := readFailures(src)
		if err != nil {
			return 0, err
		}
		lines = append(lines, more...)
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	taken := map[string]int{}
	var out bytes.Buffer
	var n int64
	for _, l := range lines {
		if taken[l.key] >= perStep {
			continue
		}
		taken[l.key]++
		out.Write(l.text)
		out.WriteByte('\n')
		n++
	}
	if n == 0 {
		// No file for no sample, as one process leaves none; nor an
		// older one that would pass for this test's.
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		return 0, nil
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o644); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return n, nil
}

// failureLine is one sample of a segment's failure file, with the step it
// counts against.
type failureLine struct {
	at   time.Time
	key  string
	text []byte
}

// readFailures reads one segment's samples; a segment that wrote no file
// has none.
func readFailures(src string) ([]failureLine, error) {
	b, err := os.ReadFile(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lines []failureLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		l, err := parseFailureLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Base(src), err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Base(src), err)
	}
	return lines, nil
}

func parseFailureLine(text []byte) (failureLine, error) {
	var x struct {
		Time      time.Time `json:"time"`
		Scenario  string    `json:"scenario"`
		Step      string    `json:"step"`
		Phase     string    `json:"phase"`
		StepIndex *int      `json:"step_index"`
	}
	if err := json.Unmarshal(text, &x); err != nil {
		return failureLine{}, err
	}
	// The step's index tells same-named steps apart within its phase (the
	// setup's step 0 is not the load's); a file from before the index was
	// written has only the names, one from before the phase only the
	// load's indexes.
	phase := x.Phase
	if phase == "" {
		phase = "load"
	}
	key := phase + "\x00" + x.Scenario + "\x00" + x.Step
	if x.StepIndex != nil {
		key = phase + "\x00" + fmt.Sprint(*x.StepIndex)
	}
	return failureLine{at: x.Time, key: key, text: append([]byte(nil), text...)}, nil
}
