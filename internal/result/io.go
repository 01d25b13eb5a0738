package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write stores r at path atomically: a reader sees the old file or the new
// one, never half of one, even if the process dies mid-write.
func Write(path string, r *Result) error {
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := tmp.Write(data); err != nil {
		cleanup()
		return fmt.Errorf("write result %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		cleanup()
		return fmt.Errorf("write result %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write result %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write result %s: %w", path, err)
	}
	return nil
}

// Read loads and checks a result file. Errors name the file and the problem.
func Read(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Decode parses and checks a result document.
func Decode(data []byte) (*Result, error) {
	var probe struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a stampede result file (invalid JSON: %v)", err)
	}
	if probe.Schema == nil {
		return nil, errors.New(`not a stampede result file (no "schema" field)`)
	}
	if *probe.Schema != Schema {
		if strings.HasPrefix(*probe.Schema, "stampede.result/") {
			return nil, fmt.Errorf("result schema %q is not supported by this version (reads %q)", *probe.Schema, Schema)
		}
		return nil, fmt.Errorf("not a stampede result file (schema %q)", *probe.Schema)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("corrupt result file: %v", err)
	}
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("corrupt result file: %w", err)
	}
	return &r, nil
}

// Check verifies the invariants every reader relies on: classes sum to the
// failed count and histograms decode and agree with their counts.
func (r *Result) Check() error {
	if err := checkCounts("totals", r.Totals.Requests, r.Totals.Successful, r.Totals.Failed, r.Totals.ByClass); err != nil {
		return err
	}
	for _, l := range []Latency{r.Totals.LatencyOK, r.Totals.LatencyAll} {
		if _, err := l.Histogram(); err != nil {
			return fmt.Errorf("totals: %w", err)
		}
	}
	for _, s := range r.Steps {
		where := fmt.Sprintf("step %q", s.Name)
		if err := checkCounts(where, s.Requests, s.Successful, s.Failed, s.ByClass); err != nil {
			return err
		}
		for _, l := range []Latency{s.LatencyOK, s.LatencyAll} {
			if _, err := l.Histogram(); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
	}
	return nil
}

func checkCounts(where string, requests, ok, failed int64, byClass map[string]int64) error {
	if ok+failed != requests {
		return fmt.Errorf("%s: successful %d + failed %d != requests %d", where, ok, failed, requests)
	}
	var sum int64
	for _, n := range byClass {
		sum += n
	}
	if sum != failed {
		return fmt.Errorf("%s: failure classes sum to %d but failed is %d", where, sum, failed)
	}
	return nil
}

// Step finds a step by name, or by "scenario/name" when names repeat.
func (r *Result) Step(name string) (*Step, bool) {
	for i := range r.Steps {
		s := &r.Steps[i]
		if s.Name == name || s.Scenario+"/"+s.Name == name {
			return s, true
		}
	}
	return nil, false
}
