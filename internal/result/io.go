package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Write stores r at path atomically: a reader sees the old file or the new
// one, never half of one, even if the process dies mid-write. A device or
// a pipe at path is written in place (isStream).
func Write(path string, r *Result) error {
	data, err := encode(r)
	if err != nil {
		return err
	}
	if err := writeFile(path, data); err != nil {
		return fmt.Errorf("write result %s: %w", path, err)
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if stream, err := isStream(path); err != nil || stream {
		if err != nil {
			return err
		}
		return writeStream(path, data)
	}
	tmp, err := tempIn(path)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
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
	// A partial result (a checkpoint, a run cut off) is where the totals
	// could run on past the series; a complete one closes every interval.
	if r.Run.Partial {
		if err := r.CheckSeriesTotals(); err != nil {
			return nil, fmt.Errorf("inconsistent result file: %w", err)
		}
	}
	return &r, nil
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
