package jmx

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"path"
	"strconv"
	"strings"
)

// dataSource is a CSV Data Set Config as a plan data source.
type dataSource struct {
	name, file, pick string
	columns          []string
}

// csv converts a CSV Data Set Config. A plan's source reads its column
// names from the file's first row, comma-separated; the set's recycle,
// stop and sharing settings become the plan's pick.
func (c *conv) csv(e *elem) {
	file := strings.TrimSpace(c.text(e.prop("filename"), modePlain, e.where()))
	if file == "" {
		c.skip(e.where(), "no filename")
		return
	}
	delim := e.rawProp("delimiter")
	if delim == "" {
		delim = ","
	}
	names := splitNames(e.prop("variableNames"))
	header := names
	switch {
	case len(names) == 0:
		names = c.headerRow(file, delim, e)
		if names == nil {
			return
		}
		header = names
	case e.boolProp("ignoreFirstLine", false):
		header = c.namedHeader(file, delim, names, e)
	default:
		c.note("%s: the plan reads column names from the file's first row: add the row %q to %s (the plan does not load without it)", e.where(), strings.Join(names, ","), file)
	}
	if delim != "," {
		c.note("%s: %s is delimited by %q; a plan reads commas: convert the file", e.where(), file, delim)
	}
	planFile := file
	if c.o.DataDir != "" && !path.IsAbs(file) && !strings.Contains(file, ":\\") {
		planFile = path.Join(c.o.DataDir, file)
	}
	if strings.HasPrefix(planFile, "../") || path.IsAbs(planFile) || strings.Contains(planFile, ":\\") {
		c.note("%s: %s is outside the plan's directory: run the plan with --allow-files naming its directory", e.where(), planFile)
	}
	ds := &dataSource{name: c.sourceName(file), file: planFile, columns: header}
	recycle := e.boolProp("recycle", true)
	stop := e.boolProp("stopThread", false)
	switch {
	case recycle:
		ds.pick = "sequential"
	case stop:
		ds.pick = "unique"
	default:
		// JMeter hands out <EOF> after the last row; a plan wraps.
		ds.pick = "sequential"
		c.note("%s: JMeter gives <EOF> after the last row; the plan starts the file again", e.where())
	}
	if sm := e.prop("shareMode"); sm != "" && sm != "shareMode.all" {
		c.note("%s: %s: each %s read the file on its own in JMeter; a plan's users share one reading", e.where(), sm, strings.TrimPrefix(sm, "shareMode."))
	}
	for i, n := range names {
		if i >= len(header) {
			c.skip(e.where(), "variable "+strconv.Quote(n)+": the file's header row has no column "+strconv.Itoa(i+1)+": not converted")
			continue
		}
		col := header[i]
		if ident(col) != col {
			// A template reads data.SOURCE.COLUMN by name: a column
			// named otherwise cannot be read.
			c.skip(e.where(), "column "+strconv.Quote(col)+" (a template reads letters, digits and _): not converted")
			continue
		}
		c.columns[n] = ds.name + "." + col
	}
	c.sources = append(c.sources, ds)
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// headerRow reads the column names from the file's first line, as JMeter
// does when the set names no variables.
func (c *conv) headerRow(file, delim string, e *elem) []string {
	names, why := c.readHeader(file, delim)
	if why != "" {
		c.skip(e.where(), "no variable names, and "+why+": not converted")
	}
	return names
}

// namedHeader is the header row of a file whose first line JMeter skips
// while it names the columns itself, by position: the plan reads them by
// the header's names, so the i-th variable is the i-th header column.
func (c *conv) namedHeader(file, delim string, names []string, e *elem) []string {
	header, why := c.readHeader(file, delim)
	if why != "" {
		c.note("%s: %s; the plan reads columns by the file's header row: check that it is %q", e.where(), why, strings.Join(names, ","))
		return names
	}
	return header
}

// readHeader is the file's first row, or why there is none.
func (c *conv) readHeader(file, delim string) ([]string, string) {
	if c.o.ReadFile == nil {
		return nil, file + " was not read"
	}
	data, err := c.o.ReadFile(file)
	if err != nil {
		return nil, file + " cannot be read (" + err.Error() + ")"
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	line, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
	r := csv.NewReader(bytes.NewReader(line))
	if len(delim) == 1 {
		r.Comma = rune(delim[0])
	}
	names, err := r.Read()
	if err != nil || len(splitNames(strings.Join(names, ","))) == 0 {
		return nil, file + " has no header row to name its columns"
	}
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names, ""
}

func (c *conv) sourceName(file string) string {
	base := path.Base(strings.ReplaceAll(file, "\\", "/"))
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	name := ident(base)
	for n := 2; ; n++ {
		taken := false
		for _, s := range c.sources {
			taken = taken || s.name == name
		}
		if !taken {
			return name
		}
		name = ident(base) + "_" + strconv.Itoa(n)
	}
}
