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
	type line struct {
		at   time.Time
		key  string
		text []byte
	}
	var lines []line
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1)
		for sc.Scan() {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			var x struct {
				Time      time.Time `json:"time"`
				Scenario  string    `json:"scenario"`
				Step      string    `json:"step"`
				Phase     string    `json:"phase"`
				StepIndex *int      `json:"step_index"`
			}
			if err := json.Unmarshal(text, &x); err != nil {
				return 0, fmt.Errorf("%s: %v", filepath.Base(src), err)
			}
			// The step's index tells same-named steps apart within its
			// phase (the setup's step 0 is not the load's); a file from
			// before the index was written has only the names, one from
			// before the phase only the load's indexes.
			phase := x.Phase
			if phase == "" {
				phase = "load"
			}
			key := phase + "\x00" + x.Scenario + "\x00" + x.Step
			if x.StepIndex != nil {
				key = phase + "\x00" + fmt.Sprint(*x.StepIndex)
			}
			lines = append(lines, line{at: x.Time, key: key, text: append([]byte(nil), text...)})
		}
		if err := sc.Err(); err != nil {
			return 0, fmt.Errorf("%s: %v", filepath.Base(src), err)
		}
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
