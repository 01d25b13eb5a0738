package dist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
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
// fails loudly instead of merging a wrong segment. The end marker line
// carries the length and SHA-256 of the gzip bytes
// ("-----END STAMPEDE RESULT----- 1234 sha256:…"): a line lost or cut
// anywhere is named as such, never merged as a shorter segment.
//
// Size: the kubelet rotates a container's log at containerLogMaxSize (10 MiB
// by default) and the API server's log endpoint serves only the newest
// file, so the whole block must be far below that. A 1-hour segment with 50
// HTTP steps, 3 connection scenarios and 40 noisy monitor series at 1 s is
// 3.3 MiB of JSON and 2.2 MiB in the log (TestEmitLargestRealistic prints
// the figures); a result past MaxEmit is refused at the source, with the
// way out, rather than cut by a rotation.
const (
	BeginMarker = "-----BEGIN STAMPEDE RESULT-----"
	EndMarker   = "-----END STAMPEDE RESULT-----"
)

const lineWidth = 76

// MaxEmit is the largest block Emit writes: half of the kubelet's default
// 10 MiB log rotation, leaving the other half to whatever the segment
// logged before it, so the block is never split across a rotation.
const MaxEmit = 5 << 20

// ErrTooLarge means a result is too large to travel through a pod's log.
var ErrTooLarge = errors.New("result too large for the pod log")

// Emit writes res between the markers.
func Emit(w io.Writer, res *result.Result) error {
	raw, err := json.Marshal(res)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw) // into memory; an error would come back from Close
	if err := zw.Close(); err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(gz.Bytes())
	if len(enc) > MaxEmit {
		return fmt.Errorf("%w: %d KiB encoded, more than the %d KiB that fit safely in a container log (the kubelet rotates logs at 10 MiB by default, and only the newest file can be read back): keep the result file (-o) on a volume instead, or run more segments so each holds less",
			ErrTooLarge, len(enc)/1024, MaxEmit/1024)
	}
	sum := sha256.Sum256(gz.Bytes())
	var b strings.Builder
	b.WriteString("\n" + BeginMarker + "\n")
	for len(enc) > 0 {
		n := min(lineWidth, len(enc))
		b.WriteString(enc[:n])
		b.WriteByte('\n')
		enc = enc[n:]
	}
	fmt.Fprintf(&b, "%s %d sha256:%x\n", EndMarker, gz.Len(), sum)
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
	var trailer, lastTrailer string
	endOnly := false
	pending := "" // a short line: data only if the end marker follows
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		// Kubernetes may prefix lines with a timestamp (--timestamps);
		// the markers are found wherever they are on the line.
		switch {
		case strings.HasSuffix(line, BeginMarker):
			cur, pending = &strings.Builder{}, ""
		case strings.Contains(line, EndMarker):
			trailer = strings.TrimSpace(line[strings.Index(line, EndMarker)+len(EndMarker):])
			if cur != nil {
				cur.WriteString(pending)
				last, cur, lastTrailer = cur, nil, trailer
			} else if last == nil {
				endOnly = true
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
		switch {
		case cur != nil:
			return nil, fmt.Errorf("%w: the log ends inside the result (the pod was cut off?)", ErrNoEmittedResult)
		case endOnly:
			return nil, fmt.Errorf("%w: the log holds the end of a result but not its beginning (the container log was rotated — the kubelet's containerLogMaxSize, 10 MiB by default — or cut)", ErrNoEmittedResult)
		}
		return nil, ErrNoEmittedResult
	}
	gz, err := base64.StdEncoding.DecodeString(last.String())
	if err != nil {
		return nil, fmt.Errorf("result in the log: %w", err)
	}
	if err := checkTrailer(lastTrailer, gz); err != nil {
		return nil, err
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

// checkTrailer compares the decoded bytes with the end marker's length and
// SHA-256. A marker without them (written by an older stampede) leaves the
// check to gzip's own CRC-32 and length.
func checkTrailer(trailer string, gz []byte) error {
	if trailer == "" {
		return nil
	}
	var n int
	var sum string
	if _, err := fmt.Sscanf(trailer, "%d sha256:%s", &n, &sum); err != nil {
		return fmt.Errorf("result in the log: end marker %q: expected LENGTH sha256:HEX", trailer)
	}
	if len(gz) != n {
		return fmt.Errorf("result in the log: %d bytes between the markers, the end marker says %d: lines were lost (log rotation or a cut stream)", len(gz), n)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(gz)); got != sum {
		return fmt.Errorf("result in the log: SHA-256 %s, the end marker says %s: the log was altered", got, sum)
	}
	return nil
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
