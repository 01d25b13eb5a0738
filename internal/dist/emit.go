package dist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// How a pod's result comes back: the segment prints its result file,
// gzipped and base64-encoded in lines of 76 characters, between two marker
// lines on stdout (`stampede run --emit-result`), and the collector reads
// the pod's log. Pod logs need no shared volume, survive the pod (until it
// is deleted), and are readable with plain kubectl:
//
//	kubectl logs POD | stampede k8s-extract > seg.json   (or by hand: the
//	lines between the markers are `base64 -d | gunzip`)
//
// Lines that are not base64 (stderr interleaved into the log stream) are
// skipped, and the decoded bytes must parse as a result, so a garbled log
// fails loudly instead of merging a wrong segment.
const (
	BeginMarker = "-----BEGIN STAMPEDE RESULT-----"
	EndMarker   = "-----END STAMPEDE RESULT-----"
)

const lineWidth = 76

// Emit writes res between the markers.
func Emit(w io.Writer, res *result.Result) error {
	raw, err := json.Marshal(res)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(gz.Bytes())
	var b strings.Builder
	b.WriteString("\n" + BeginMarker + "\n")
	for len(enc) > 0 {
		n := min(lineWidth, len(enc))
		b.WriteString(enc[:n])
		b.WriteByte('\n')
		enc = enc[n:]
	}
	b.WriteString(EndMarker + "\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// ErrNoEmittedResult means a log holds no complete marked result.
var ErrNoEmittedResult = errors.New("no result between the markers in the log")

// Extract finds the last marked result in a log and decodes it.
func Extract(log io.Reader) (*result.Result, error) {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var cur, last *strings.Builder
	pending := "" // a short line: data only if the end marker follows
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		// Kubernetes may prefix lines with a timestamp (--timestamps);
		// the markers are found wherever they are on the line.
		switch {
		case strings.HasSuffix(line, BeginMarker):
			cur, pending = &strings.Builder{}, ""
		case strings.HasSuffix(line, EndMarker):
			if cur != nil {
				cur.WriteString(pending)
				last, cur = cur, nil
			}
		case cur != nil:
			if i := strings.LastIndexByte(line, ' '); i >= 0 {
				line = line[i+1:]
			}
			if !isBase64(line) {
				continue
			}
			if len(line) == lineWidth {
				cur.WriteString(line)
				pending = "" // a short line before a full one was noise
			} else {
				pending = line
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if last == nil {
		if cur != nil {
			return nil, fmt.Errorf("%w: the log ends inside the result (the pod was cut off?)", ErrNoEmittedResult)
		}
		return nil, ErrNoEmittedResult
	}
	gz, err := base64.StdEncoding.DecodeString(last.String())
	if err != nil {
		return nil, fmt.Errorf("result in the log: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("result in the log: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("result in the log: %w", err)
	}
	return result.Decode(raw)
}

func isBase64(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}
