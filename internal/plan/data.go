package plan

import (
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// LoadOptions change where and how much of a plan's data is read.
type LoadOptions struct {
	// DataDir, when set, is where the data sources' relative paths are
	// resolved instead of the plan's directory: a Kubernetes pod reads the
	// plan from its ConfigMap and the data from a volume mounted elsewhere.
	DataDir string
	// Index of Count, when Count > 1, loads only segment Index's stripe of
	// each unique source (rows Index, Index+Count, ...): the rows that
	// segment hands out and no other, so a segment holds 1/Count of a large
	// file. Sequential, random and by_tenant sources are loaded whole, since
	// every segment may read any of their rows.
	Index, Count int
	// AllowFiles are directories beyond the plan's own and DataDir that
	// body_file, multipart and data files may be read from (--allow-files;
	// files.go).
	AllowFiles []string
	// Env reads the ${NAME} references (the process's environment, which
	// only the binary's main reads: session.Process.LookupEnv); nil means
	// no variable is set, as for Parse.
	Env func(string) (string, bool)
}

// LoadFileWith reads and compiles a plan file. Data files and TLS files
// are resolved relative to the plan's directory, so a plan runs the same
// from anywhere; o loads the plan of one segment, or with its data in
// another directory. (It is not called Load because that names the load
// profile.)
func LoadFileWith(path string, o LoadOptions) (*Plan, error) {
	if o.Count > 1 && (o.Index < 0 || o.Index >= o.Count) {
		return nil, fmt.Errorf("segment %d/%d: expected 0 ≤ index < count", o.Index, o.Count)
	}
	if err := regularFile(path); err != nil {
		return nil, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseOpts(path, src, o.Env, openFile, o)
}

// FileRows is how many data rows the source's file has; Rows may hold only
// a segment's share of them (Share).
func (ds *DataSource) FileRows() int {
	if ds.ShareCount > 1 {
		return ds.TotalRows
	}
	return len(ds.Rows)
}

// dataPath resolves a data source's file name.
func (p *parser) dataPath(name string) string {
	if p.loadOpts.DataDir != "" && !filepath.IsAbs(name) {
		return filepath.Join(p.loadOpts.DataDir, name)
	}
	return p.resolve(name)
}

// loadData reads ds's file, only the segment's stripe of it for a unique
// source, and returns a message naming the file on failure.
func (p *parser) loadData(ds *DataSource) string {
	index, count := 0, 1
	if p.loadOpts.Count > 1 && ds.Pick == PickUnique && ds.ByTenant == "" {
		index, count = p.loadOpts.Index, p.loadOpts.Count
	}
	where := "the plan's directory"
	if p.loadOpts.DataDir != "" {
		where = p.loadOpts.DataDir + " (--data-dir)"
	}
	cols, rows, total, msg := readCSV(ds.File, p.open, where, index, count)
	if msg != "" {
		return msg
	}
	if len(rows) == 0 {
		// The same check a whole run makes (a file without data rows),
		// for the segment's share: it could hand out no row at all.
		return fmt.Sprintf("data file %s has %d data rows, and segment %d/%d takes rows %d, %d, … of a unique source: it has none of them; run fewer segments or add rows",
			ds.File, total, index, count, index, index+count)
	}
	ds.Columns, ds.Rows, ds.TotalRows = cols, rows, total
	if count > 1 {
		ds.ShareIndex, ds.ShareCount = index, count
	}
	return ""
}

// readCSV loads a data file, keeping the data rows k with k mod count =
// index (all of them for 0 of 1): the runs it feeds are short and rows are
// handed out on the hot path, so memory is the cheaper place to keep them.
// It returns the rows kept and the file's count of data rows, or a
// message naming the file on failure; where says where relative paths
// are taken from.
func readCSV(path string, open func(string) (io.ReadCloser, error), where string, index, count int) (cols []string, rows [][]string, total int, msg string) {
	lower := strings.ToLower(path)
	gz := strings.HasSuffix(lower, ".csv.gz")
	if !gz && !strings.HasSuffix(lower, ".csv") {
		return nil, nil, 0, "bad data file " + q(path) + ": expected a .csv or .csv.gz file"
	}
	f, err := open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, 0, "data file " + path + " not found (paths are relative to " + where + ")"
		}
		return nil, nil, 0, "cannot read data file: " + err.Error()
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, nil, 0, "data file " + path + " is not gzip: " + err.Error()
		}
		defer zr.Close()
		r = zr
	}
	// Bounded as it is read, decompressed: a 1 MB .csv.gz can hold a
	// gigabyte of rows, or one line of 4 GiB that the CSV reader would
	// buffer whole.
	cr := &csvFile{path: path, br: &boundedReader{r: r}}
	cr.r = csv.NewReader(cr.br)
	// Checked here rather than by encoding/csv so the message can say what
	// the header expects.
	cr.r.FieldsPerRecord = -1
	header, msg := cr.header()
	if msg != "" {
		return nil, nil, 0, msg
	}
	rows, total, msg = cr.rows(len(header), index, count)
	if msg != "" {
		return nil, nil, 0, msg
	}
	return header, rows, total, ""
}

// csvFile is a data file being read, bounded as it is.
type csvFile struct {
	path string
	br   *boundedReader
	r    *csv.Reader
}

// header reads the header row: named columns, each once.
func (c *csvFile) header() ([]string, string) {
	path := c.path
	header, err := c.r.Read()
	c.br.record()
	if err == io.EOF {
		return nil, "data file " + path + " is empty: expected a header row and at least one data row"
	}
	if err != nil {
		if m := tooLarge(path, 0, err); m != "" {
			return nil, m
		}
		return nil, "data file " + csvErr(path, err)
	}
	// Spreadsheet exports often start with a byte order mark that would
	// otherwise become part of the first column's name.
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	seen := make(map[string]bool, len(header))
	for _, col := range header {
		if col == "" {
			return nil, "data file " + path + " line 1: empty column name in the header"
		}
		if seen[col] {
			return nil, "data file " + path + " line 1: column " + q(col) + " appears twice in the header"
		}
		seen[col] = true
	}
	return header, ""
}

// rows reads the data rows, keeping those k with k mod count = index,
// and returns them with the file's count of data rows.
func (c *csvFile) rows(width, index, count int) (rows [][]string, total int, msg string) {
	path := c.path
	line := 1
	var held int64 // the memory the rows kept take, about
	for {
		rec, err := c.r.Read()
		c.br.record()
		if err == io.EOF {
			break
		}
		if err != nil {
			if m := tooLarge(path, line, err); m != "" {
				return nil, 0, m
			}
			return nil, 0, "data file " + csvErr(path, err)
		}
		line, _ = c.r.FieldPos(0)
		if len(rec) != width {
			return nil, 0, "data file " + path + " line " + strconv.Itoa(line) + ": found " + strconv.Itoa(len(rec)) + " fields, expected " + strconv.Itoa(width) + " as in the header"
		}
		if total%count == index {
			rows = append(rows, rec)
			if held += rowCost(rec); held > maxDataHeld {
				return nil, 0, fmt.Sprintf("data file %s: its rows take more than %d MiB of memory by line %d (every row is held in memory for the run); use a smaller file, or split the run (--workers, --segment) with pick: unique so each process holds its share",
					path, maxDataHeld>>20, line)
			}
		}
		total++
	}
	if total == 0 {
		return nil, 0, "data file " + path + " has a header but no data rows"
	}
	return rows, total, ""
}

func csvErr(path string, err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return path + " line " + strconv.Itoa(pe.Line) + ": " + pe.Err.Error()
	}
	return path + ": " + err.Error()
}

// Bounds on a data file, decompressed: the rows are held in memory for the
// whole run, so a file's size is a promise about the run's memory.
const (
	// maxDataHeld bounds the memory the rows kept take (rowCost).
	maxDataHeld = 128 << 20
	// maxDataRead bounds what is read, kept or not (a segment keeps a
	// stripe of a unique source, and reads the whole file for it).
	maxDataRead = 1 << 30
	// maxDataRecord bounds one row, which the CSV reader holds whole.
	maxDataRecord = 1 << 20
)

var (
	errDataRead   = errors.New("data file too large")
	errDataRecord = errors.New("data row too long")
)

// boundedReader stops a data file at maxDataRead bytes, and a row at
// maxDataRecord bytes past the end of the row before it (record marks
// each row's end; the CSV reader's read-ahead makes that about right).
type boundedReader struct {
	r           io.Reader
	read, since int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	b.since += int64(n)
	switch {
	case b.read > maxDataRead:
		return n, errDataRead
	case b.since > maxDataRecord+64<<10:
		return n, errDataRecord
	}
	return n, err
}

func (b *boundedReader) record() { b.since = 0 }

// tooLarge is the message for a file stopped by boundedReader, naming
// the last line read whole (0: none); "" for any other error.
func tooLarge(path string, line int, err error) string {
	after := "in its header"
	if line > 0 {
		after = "after line " + strconv.Itoa(line)
	}
	switch {
	case errors.Is(err, errDataRead):
		return fmt.Sprintf("data file %s holds more than %d GiB of rows, decompressed: use a smaller file", path, maxDataRead>>30)
	case errors.Is(err, errDataRecord):
		return fmt.Sprintf("data file %s has a row longer than %d MiB %s: a data row is a few values, not a document", path, maxDataRecord>>20, after)
	}
	return ""
}

// rowCost is about what a kept row takes in memory: its text, a string
// header per field, the row's slice and its place in the rows slice.
func rowCost(rec []string) int64 {
	n := int64(24 + 16 + 16*len(rec))
	for _, f := range rec {
		n += int64(len(f))
	}
	return n
}
