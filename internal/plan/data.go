package plan

import (
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// openFile opens a regular file only: opening a FIFO blocks until a writer
// comes (validate hung forever on one), and a device or directory is no
// data file either.
func openFile(path string) (io.ReadCloser, error) {
	if err := regularFile(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// regularFile returns an error unless path is a regular file (after
// symbolic links), saying what it is instead.
func regularFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if m := fi.Mode(); !m.IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file", path, modeName(m))
	}
	return nil
}

func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// readCSV loads a whole data file: the runs it feeds are short and rows are
// handed out on the hot path, so memory is the cheaper place to keep them.
// It returns a message naming the file on failure.
func readCSV(path string, open func(string) (io.ReadCloser, error)) (cols []string, rows [][]string, msg string) {
	lower := strings.ToLower(path)
	gz := strings.HasSuffix(lower, ".csv.gz")
	if !gz && !strings.HasSuffix(lower, ".csv") {
		return nil, nil, "bad data file " + q(path) + ": expected a .csv or .csv.gz file"
	}
	f, err := open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, "data file " + path + " not found (paths are relative to the plan's directory)"
		}
		return nil, nil, "cannot read data file: " + err.Error()
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, nil, "data file " + path + " is not gzip: " + err.Error()
		}
		defer zr.Close()
		r = zr
	}
	cr := csv.NewReader(r)
	// Checked here rather than by encoding/csv so the message can say what
	// the header expects.
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil, "data file " + path + " is empty: expected a header row and at least one data row"
	}
	if err != nil {
		return nil, nil, "data file " + csvErr(path, err)
	}
	// Spreadsheet exports often start with a byte order mark that would
	// otherwise become part of the first column's name.
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	seen := make(map[string]bool, len(header))
	for _, c := range header {
		if c == "" {
			return nil, nil, "data file " + path + " line 1: empty column name in the header"
		}
		if seen[c] {
			return nil, nil, "data file " + path + " line 1: column " + q(c) + " appears twice in the header"
		}
		seen[c] = true
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, "data file " + csvErr(path, err)
		}
		if len(rec) != len(header) {
			line, _ := cr.FieldPos(0)
			return nil, nil, "data file " + path + " line " + strconv.Itoa(line) + ": found " + strconv.Itoa(len(rec)) + " fields, expected " + strconv.Itoa(len(header)) + " as in the header"
		}
		rows = append(rows, rec)
	}
	if len(rows) == 0 {
		return nil, nil, "data file " + path + " has a header but no data rows"
	}
	return header, rows, ""
}

func csvErr(path string, err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return path + " line " + strconv.Itoa(pe.Line) + ": " + pe.Err.Error()
	}
	return path + ": " + err.Error()
}
