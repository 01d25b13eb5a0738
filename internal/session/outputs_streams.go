package session

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/output/otlp"
	"github.com/stampede-load/stampede/internal/output/points"
	"github.com/stampede-load/stampede/internal/output/promrw"
)

// OutputTokenEnv holds the bearer token the network outputs send, when
// --output-token-file does not name a file with it.
const OutputTokenEnv = "STAMPEDE_OUTPUT_TOKEN"

// streamConfig is what every network output of one run shares: the
// run's labels and the receiver's credentials.
type streamConfig struct {
	run    points.Run
	token  string
	header http.Header
	// expand resolves ${NAME} in a URL or a header value.
	expand func(string) (string, error)
	// otelService and otelAttrs are OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES.
	otelService, otelAttrs string
}

// NewTestID is a run's id when --testid gives none: the time it starts
// and a random tail, so two runs started in the same second differ and
// the ids sort by start in Grafana's list.
func NewTestID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// streamConfig reads --testid, --label, --output-header and the token;
// a bad one is a usage error before any load.
func (o Outputs) streamConfig(pr Process) (streamConfig, error) {
	c := streamConfig{run: points.Run{TestID: o.TestID, Segment: o.Segment}, header: http.Header{},
		expand:      func(s string) (string, error) { return expandMonitorEnv(s, pr.lookupEnv) },
		otelService: pr.getenv("OTEL_SERVICE_NAME"), otelAttrs: pr.getenv("OTEL_RESOURCE_ATTRIBUTES")}
	if c.run.TestID == "" {
		c.run.TestID = NewTestID(time.Now())
	}
	if c.run.Segment == "" {
		c.run.Segment = "all"
	}
	labels, err := parseLabels(o.Labels)
	if err != nil {
		return c, err
	}
	c.run.Labels = labels
	for _, h := range o.Headers {
		name, v, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return c, fmt.Errorf("--output-header %q: expected 'Name: value'", name)
		}
		v, err := c.expandEnv(strings.TrimSpace(v))
		if err != nil {
			return c, fmt.Errorf("--output-header %s: %v", name, err)
		}
		c.header.Add(name, v)
	}
	token, err := o.token(pr)
	c.token = token
	return c, err
}

// parseLabels reads the --label flags. A name given twice is refused: a
// receiver refuses every batch whose series name a label twice.
func parseLabels(flags []string) ([]points.Label, error) {
	var labels []points.Label
	seen := map[string]string{}
	for _, l := range flags {
		lb, err := points.ParseLabel(l)
		if err != nil {
			return nil, fmt.Errorf("--label: %v", err)
		}
		if first, dup := seen[lb.Name]; dup {
			return nil, fmt.Errorf("--label %s: %s is set already (--label %s); give each name once", l, lb.Name, first)
		}
		seen[lb.Name] = l
		labels = append(labels, lb)
	}
	return labels, nil
}

// token is the bearer token: from --output-token-file, else from the
// environment; never printed.
func (o Outputs) token(pr Process) (string, error) {
	if o.TokenFile == "" {
		return strings.TrimSpace(pr.getenv(OutputTokenEnv)), nil
	}
	b, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return "", fmt.Errorf("--output-token-file: %v", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("--output-token-file %s is empty", o.TokenFile)
	}
	return t, nil
}

// promrw opens a remote-write output; ${NAME} in its URL keeps a password
// out of the command line.
func (c streamConfig) promrw(target string) (*promrw.Sink, error) {
	u, err := c.expandURL(target)
	if err != nil {
		return nil, err
	}
	return promrw.New(shownSpec("prometheus-rw", target), u, promrw.Options{Run: c.run, BearerToken: c.token, Header: c.header})
}

// otlp opens an OTLP output, with the OpenTelemetry resource variables.
func (c streamConfig) otlp(target, version string) (*otlp.Sink, error) {
	u, err := c.expandURL(target)
	if err != nil {
		return nil, err
	}
	h := c.header.Clone()
	if c.token != "" {
		if h.Get("Authorization") != "" {
			return nil, fmt.Errorf("a bearer token and an Authorization header: give one of the two")
		}
		h.Set("Authorization", "Bearer "+c.token)
	}
	return otlp.New(shownSpec("otlp", target), u, otlp.Options{Version: version, Run: c.run, Header: h,
		ServiceName: c.otelService, ResourceAttributes: c.otelAttrs})
}

func (c streamConfig) expandEnv(s string) (string, error) {
	if c.expand == nil {
		return s, nil
	}
	return c.expand(s)
}

// expandURL is a URL with ${NAME} expanded. A value inside the
// user:password part is percent-encoded, so a password may hold the
// characters that end that part (@ : / # ? %).
func (c streamConfig) expandURL(raw string) (string, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if !ok || at < 0 {
		return c.expandEnv(raw)
	}
	var err error
	userinfo := envRefRE.ReplaceAllStringFunc(rest[:at], func(ref string) string {
		v, e := c.expandEnv(ref)
		if e != nil && err == nil {
			err = e
		}
		return strings.ReplaceAll(url.QueryEscape(v), "+", "%20")
	})
	if err != nil {
		return "", err
	}
	tail, err := c.expandEnv(rest[at:])
	return scheme + "://" + userinfo + tail, err
}

// shownSpec is KIND=URL as a warning may show it: without a password,
// also when the URL does not parse.
func shownSpec(kind, raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User != nil {
			raw = u.Redacted()
		}
		return kind + "=" + raw
	}
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, _, _ := strings.Cut(rest[:at], ":")
			raw = scheme + "://" + user + ":xxxxx" + rest[at:]
		}
	}
	return kind + "=" + raw
}

// podArgs are the flags that make every pod of a Kubernetes run push its
// own segment to the network outputs, as one run: the --testid (made
// here when not given, so all pods share it) and the --labels. Header
// values go as written, so a ${NAME} in one is read in the pod, from the
// --env-from-secret Secret, as the token is.
func (o Outputs) podArgs(stderr io.Writer, now time.Time) ([]string, error) {
	if len(o.Streams) == 0 {
		return nil, nil
	}
	if o.TokenFile != "" {
		return nil, fmt.Errorf("--output-token-file: a pod cannot read this machine's files: put %s in the --env-from-secret Secret", OutputTokenEnv)
	}
	var args []string
	for _, spec := range o.Streams {
		kind, target, _ := strings.Cut(spec, "=")
		if kind != "prometheus-rw" && kind != "otlp" {
			return nil, fmt.Errorf("--output %q: pods stream to prometheus-rw=URL or otlp=URL (a pod's files go with it)", spec)
		}
		// ${NAME} is read in the pod, and may hold what a URL may not.
		if u, err := url.Parse(envRefRE.ReplaceAllString(target, "x")); err != nil || u.Host == "" || u.Scheme == "" {
			return nil, fmt.Errorf("--output %s: expected a URL the pods can reach, http(s)://host:port/…", shownSpec(kind, target))
		}
		args = append(args, "--output", spec)
	}
	if _, err := parseLabels(o.Labels); err != nil {
		return nil, err
	}
	for _, l := range o.Labels {
		args = append(args, "--label", l)
	}
	for _, h := range o.Headers {
		if name, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--output-header %q: expected 'Name: value'", h)
		}
		args = append(args, "--output-header", h)
	}
	id := o.TestID
	if id == "" {
		id = NewTestID(now)
	}
	fmt.Fprintf(stderr, "pods stream as testid=%s, each with its segment label\n", id)
	return append(args, "--testid", id), nil
}
