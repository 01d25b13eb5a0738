package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Output is the result file of one run, kept writable for the whole run.
// A run that takes every open file or fills the disk must not lose what it
// measured, so Open sets aside, before any load, what the writes will
// need: three open files in the result's directory, and disk space for the
// final result (a preallocated file). Nothing is opened or allocated at
// write time, except to grow the disk reservation after a checkpoint.
//
// Checkpoints alternate between two open files: the new one is written
// while the last good one stays in place, and the two are swapped
// atomically (renameat2 RENAME_EXCHANGE), so a reader always sees a whole
// result and a failed checkpoint leaves the previous one. The final result
// is written into the preallocated file and renamed into place.
type Output struct {
	path string
	mu   sync.Mutex

	// stream is a device or pipe at path (isStream): no checkpoint, no
	// spare files, the final result written into it once.
	stream *os.File

	// reserve holds disk space for the final result.
	reserve     *os.File
	reserveName string
	reserved    int64
	// cur is the file now at path (nil before the first write); scratch,
	// named scratchName, gets the next checkpoint.
	cur, scratch *os.File
	scratchName  string
	firstName    string // the name cur had before the first checkpoint

	saved     bool
	savedAt   time.Time
	savedPart bool
	// complete: a complete result was written by Final; nothing partial
	// may replace it.
	complete bool
	warned   bool
	// Warn, when set, is told once when the disk reservation cannot grow
	// with the result.
	Warn func(string)
}

// SpaceError says the result's file system has too little free space.
type SpaceError struct {
	Dir        string
	Need, Free int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("not enough free space for the result in %s: it may need up to %s and %s is free; free some space or choose another -o",
		e.Dir, FormatBytes(e.Need), FormatBytes(e.Free))
}

// FormatBytes is n in the largest binary unit that keeps it above 1.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Open prepares path for a run's result, setting aside need bytes of disk
// for the final write. It fails with a *SpaceError when the file system
// has less than that free. Close releases what is left.
func Open(path string, need int64) (*Output, error) {
	if stream, err := isStream(path); err != nil || stream {
		if err != nil {
			return nil, err
		}
		f, err := openStream(path)
		if err != nil {
			return nil, err
		}
		return &Output{path: path, stream: f}, nil
	}
	dir := filepath.Dir(path)
	free, ok := freeBytes(dir)
	if ok && free < need {
		return nil, &SpaceError{Dir: dir, Need: need, Free: free}
	}
	removeStale(path)
	o := &Output{path: path}
	var err error
	if o.reserve, err = tempIn(path); err != nil {
		return nil, fmt.Errorf("write result %s: %w", path, err)
	}
	o.reserveName = o.reserve.Name()
	if err := preallocate(o.reserve, need); err != nil {
		o.Close()
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			free, _ := freeBytes(dir)
			return nil, &SpaceError{Dir: dir, Need: need, Free: free}
		}
		if !errors.Is(err, errNoPreallocate) {
			return nil, fmt.Errorf("write result %s: %w", path, err)
		}
		// A file system without fallocate: the open files are still
		// set aside, the disk space is not.
		if o.reserve, err = tempIn(path); err != nil {
			return nil, fmt.Errorf("write result %s: %w", path, err)
		}
		o.reserveName = o.reserve.Name()
	} else {
		o.reserved = need
	}
	// Neither spare is at path yet: the first checkpoint renames scratch
	// there, and cur (named firstName) becomes the next scratch.
	if o.scratch, err = tempIn(path); err == nil {
		o.scratchName = o.scratch.Name()
		if o.cur, err = tempIn(path); err == nil {
			o.firstName = o.cur.Name()
		}
	}
	if err != nil {
		o.Close()
		return nil, fmt.Errorf("write result %s: %w", path, err)
	}
	return o, nil
}

// tempIn makes a spare file beside path, named for it and for this
// process (.NAME.tmp-pPID-*): a process killed outright leaves its spares
// behind, and the next run for the same result removes those of processes
// that no longer run (removeStale).
func tempIn(path string) (*os.File, error) {
	return os.CreateTemp(filepath.Dir(path), tempPrefix(path)+strconv.Itoa(os.Getpid())+"-*")
}

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-p" }

// removeStale removes the spare files that runs for the same result left
// when they were killed (kill -9, a crash, a CI timeout): those named for
// a process that no longer runs. A live process's are its own, in use.
func removeStale(path string) {
	prefix := tempPrefix(path)
	dir := filepath.Dir(path)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// Path is where the result goes.
func (o *Output) Path() string { return o.path }

// Saved says whether a result is at Path, when it was written and
// whether it was partial.
func (o *Output) Saved() (at time.Time, partial, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.savedAt, o.savedPart, o.saved
}

func encode(r *Result) ([]byte, error) {
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return append(data, '\n'), nil
}

// fill makes f hold exactly data, on disk.
func fill(f *os.File, data []byte) error {
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return err
	}
	return f.Sync()
}

// Checkpoint replaces the file at Path with r. When it fails, the file
// there (the previous checkpoint, if any) is left as it was.
func (o *Output) Checkpoint(r *Result) error {
	data, err := encode(r)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.complete || o.stream != nil {
		return nil
	}
	if err := o.checkpoint(data); err != nil {
		return fmt.Errorf("write result %s: %w", o.path, err)
	}
	o.done(r)
	o.grow(int64(len(data)))
	return nil
}

func (o *Output) checkpoint(data []byte) error {
	if o.scratch == nil {
		return writeFile(o.path, data)
	}
	if err := fill(o.scratch, data); err != nil {
		// Give back what the failed write took, for the final one; the
		// write's own error is the one to report.
		_ = o.scratch.Truncate(0)
		return err
	}
	if o.firstName != "" {
		if err := os.Rename(o.scratchName, o.path); err != nil {
			return err
		}
		o.cur, o.scratch = o.scratch, o.cur
		o.scratchName, o.firstName = o.firstName, ""
		return nil
	}
	err := exchange(o.scratchName, o.path)
	if err == nil {
		o.cur, o.scratch = o.scratch, o.cur
		return nil
	}
	if !errors.Is(err, errNoExchange) {
		return err
	}
	// The file system cannot swap two names: replace the old file and
	// write later checkpoints the usual way (a new temporary file each).
	if err := os.Rename(o.scratchName, o.path); err != nil {
		return err
	}
	o.cur.Close()
	o.cur, o.scratch, o.scratchName = o.scratch, nil, ""
	return nil
}

// grow keeps the disk reservation at twice the last result written, so
// the final result, which grows with the run, still fits.
func (o *Output) grow(n int64) {
	if o.reserve == nil || o.reserved <= 0 || o.reserved >= 2*n {
		return
	}
	if err := preallocate(o.reserve, 2*n); err != nil {
		if !o.warned && o.Warn != nil {
			o.warned = true
			o.Warn(fmt.Sprintf("cannot set aside %s for the final result in %s (%v); it may not fit when the run ends",
				FormatBytes(2*n), filepath.Dir(o.path), err))
		}
		return
	}
	o.reserved = 2 * n
}

// Final writes the run's result: into the space set aside at Open, so it
// fits even on a full disk and with every file descriptor taken, unless
// the result has outgrown the reservation and the disk is full.
func (o *Output) Final(r *Result) error {
	data, err := encode(r)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.complete && r.Run.Partial {
		// A second Ctrl-C racing the run's own end must not replace the
		// complete result with a partial one.
		return nil
	}
	if o.stream != nil {
		return o.finalStream(r, data)
	}
	if o.reserve != nil {
		err = fill(o.reserve, data)
		if err == nil {
			err = os.Rename(o.reserveName, o.path)
		}
		if err == nil {
			o.reserve.Close()
			o.reserve, o.reserveName = nil, ""
			o.finalDone(r)
			return nil
		}
		// Free the reservation for the other way (best effort: the
		// result is already written).
		_ = o.reserve.Truncate(0)
	}
	if err2 := o.checkpoint(data); err2 != nil {
		if err == nil {
			err = err2
		}
		return fmt.Errorf("write result %s: %w", o.path, err)
	}
	o.finalDone(r)
	return nil
}

// finalStream writes the one result a device or pipe gets: a reader of a
// pipe takes one document, so a partial result written as a second
// Ctrl-C races the run's end is the last one, not the first of two.
func (o *Output) finalStream(r *Result, data []byte) error {
	if o.saved {
		return nil
	}
	if _, err := o.stream.Write(data); err != nil {
		return fmt.Errorf("write result %s: %w", o.path, err)
	}
	o.finalDone(r)
	return nil
}

func (o *Output) done(r *Result) {
	o.saved, o.savedAt, o.savedPart = true, time.Now(), r.Run.Partial
}

// finalDone marks a successful final write; a complete one is final.
func (o *Output) finalDone(r *Result) {
	o.done(r)
	o.complete = o.complete || !r.Run.Partial
}

// Close removes the spare files and closes what Open opened; the result
// at Path stays.
func (o *Output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, name := range []string{o.reserveName, o.scratchName, o.firstName} {
		if name != "" {
			os.Remove(name)
		}
	}
	for _, f := range []*os.File{o.reserve, o.cur, o.scratch, o.stream} {
		if f != nil {
			f.Close()
		}
	}
	o.reserve, o.cur, o.scratch, o.stream = nil, nil, nil, nil
	o.reserveName, o.scratchName, o.firstName = "", "", ""
	return nil
}
