package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// JUnit XML as Jenkins, GitLab and GitHub test reporters read it: one
// <testsuite> per run (per level for gates and sweeps), one <testcase> per
// threshold, SLO and step check, the measured value in each case's
// system-out and a failure message a person can act on.

// junitSuites has no skipped count: the Jenkins JUnit schema
// (xunit-plugin's junit-10.xsd) allows one on <testsuite> only, where each
// suite gives its own.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkip    `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitSkip has no type: the schemas Jenkins and GitLab follow give
// <skipped> a message only.
type junitSkip struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func secs(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

// JUnit writes r as JUnit XML.
func JUnit(w io.Writer, r *result.Result) error {
	name := r.Plan.Name
	if name == "" {
		name = "stampede"
	}
	doc := junitSuites{Name: "stampede: " + name}
	// A gates or sweep result's own thresholds are its levels' SLOs again
	// ("users 400: p95 < 1s"): the level suites say it once.
	if len(r.Levels) == 0 {
		doc.Suites = append(doc.Suites, runSuite(name, "", r, nil))
	}
	for i := range r.Levels {
		l := &r.Levels[i]
		if l.Result == nil {
			continue
		}
		level := fmt.Sprintf("level %d: %s %s", i+1, l.Vary, trimFloat(l.Value))
		doc.Suites = append(doc.Suites, runSuite(name+" "+level, level, l.Result, l))
	}
	var total float64
	for i := range doc.Suites {
		s := &doc.Suites[i]
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		t, _ := strconv.ParseFloat(s.Time, 64)
		total += t
	}
	doc.Time = secs(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// runSuite is one run's suite; a level's cases get the level in their
// class name, since Surefire and junit2html key a case by class name and
// name and would merge the levels' same-named cases into one.
func runSuite(name, level string, r *result.Result, l *result.Level) junitSuite {
	s := junitSuite{Name: name, Time: secs(r.Run.DurationS)}
	if !r.Run.Started.IsZero() {
		s.Timestamp = r.Run.Started.UTC().Format("2006-01-02T15:04:05")
	}
	s.Properties = []junitProperty{
		{"plan", r.Plan.File},
		{"target", r.Plan.Target},
		{"model", r.Run.Model},
		{"requests", strconv.FormatInt(r.Totals.Requests, 10)},
		{"failed", strconv.FormatInt(r.Totals.Failed, 10)},
	}
	cls := "stampede." + classPart(r.Plan.Name)
	if level != "" {
		cls += "." + classPart(strings.ReplaceAll(level, ":", ""))
	}
	if r.Run.Partial {
		// A cut-short run measured less than it was asked to: an error,
		// not a failure of the system under test.
		s.Cases = append(s.Cases, junitCase{
			Name: "run completes", Classname: cls + ".run", Time: secs(r.Run.DurationS),
			Error: &junitProblem{Type: "partial", Message: "the run did not complete: " + r.Run.PartialReason,
				Text: "The figures cover only the part that ran; thresholds were checked on it."},
		})
	}
	// A level's result carries the SLO it was judged by as its thresholds
	// too; the SLO cases say it once.
	if l == nil || len(l.SLO) == 0 {
		for _, t := range r.Thresholds {
			s.Cases = append(s.Cases, thresholdCase(cls+".thresholds", t))
		}
	}
	if l != nil {
		for _, t := range l.SLO {
			s.Cases = append(s.Cases, thresholdCase(cls+".slo", t))
		}
		if l.NotInPlace != "" {
			s.Cases = append(s.Cases, junitCase{Name: "load in place", Classname: cls + ".level",
				Failure: &junitProblem{Type: "not_in_place", Message: "the level's load was not in place: " + l.NotInPlace}})
		}
	}
	for i, st := range r.Steps {
		c := stepCase(cls+".checks", st)
		if st.Requests == 0 {
			c.Skipped = &junitSkip{Message: neverSent(r.Steps[:i], st.Scenario)}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, c := range s.Cases {
		s.Tests++
		if c.Failure != nil {
			s.Failures++
		}
		if c.Error != nil {
			s.Errors++
		}
		if c.Skipped != nil {
			s.Skipped++
		}
	}
	return s
}

// neverSent says why a step with no requests has none, as far as the
// result tells: a failed step ends its iteration (vu.User.failedAt), so
// failures in earlier steps of the scenario are the likely reason.
func neverSent(earlier []result.Step, scenario string) string {
	var failed []string
	for _, st := range earlier {
		if st.Scenario == scenario && st.Failed > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d of %d", st.Name, st.Failed, st.Requests))
		}
	}
	if len(failed) == 0 {
		return "never sent: the run made no request of this step"
	}
	return fmt.Sprintf("never sent: earlier steps of scenario %s failed (%s), and a failed step ends its iteration",
		scenario, strings.Join(failed, ", "))
}

// classPart keeps a class name one dotted word per part, as CI reporters
// group on the dots.
func classPart(s string) string {
	if s == "" {
		return "plan"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == ' ' {
			return '_'
		}
		return r
	}, s)
}

func thresholdCase(cls string, t result.Threshold) junitCase {
	c := junitCase{Name: t.Expr, Classname: cls, Time: "0", SystemOut: "measured: " + t.Value}
	switch {
	case t.Error != "":
		c.Error = &junitProblem{Type: "threshold", Message: fmt.Sprintf("%s could not be checked: %s", t.Expr, t.Error)}
	case !t.Pass:
		c.Failure = &junitProblem{Type: "threshold", Message: fmt.Sprintf("%s failed: measured %s", t.Expr, t.Value),
			Text: fmt.Sprintf("The threshold %q was not met: the run measured %s.", t.Expr, t.Value)}
	}
	return c
}

// stepCase checks that a step's requests succeeded: status, expect:
// checks and captures, as the plan says. Its time is the mean latency,
// the time one request of it took.
func stepCase(cls string, st result.Step) junitCase {
	name := st.Name
	if st.Scenario != "" {
		name = st.Scenario + "/" + st.Name
	}
	c := junitCase{Name: name, Classname: cls, Time: secs(st.LatencyAll.AvgUS / 1e6)}
	if st.Requests == 0 {
		c.SystemOut = "measured: 0 requests (never sent)"
		return c
	}
	rate := 100 * float64(st.Successful) / float64(st.Requests)
	c.SystemOut = fmt.Sprintf("measured: %d requests, %d ok, %d failed (%s%% ok)", st.Requests, st.Successful, st.Failed, trimFloat(roundTo(rate, 2)))
	if st.Failed == 0 {
		return c
	}
	classes := make([]string, 0, len(st.ByClass))
	for k, n := range st.ByClass {
		if n > 0 {
			classes = append(classes, k)
		}
	}
	sort.Slice(classes, func(i, j int) bool {
		a, b := st.ByClass[classes[i]], st.ByClass[classes[j]]
		if a != b {
			return a > b
		}
		return classes[i] < classes[j]
	})
	var parts []string
	for _, k := range classes {
		parts = append(parts, fmt.Sprintf("%d %s", st.ByClass[k], k))
	}
	msg := fmt.Sprintf("%d of %d requests failed (%s)", st.Failed, st.Requests, strings.Join(parts, ", "))
	var text strings.Builder
	text.WriteString(msg + ".\n")
	if len(st.Errors) > 0 {
		e := st.Errors[0]
		what := withStatus(e)
		msg += fmt.Sprintf("; most often: %s (%d times)", what, e.Count)
		text.WriteString("What the server answered, most frequent first:\n")
		for i, e := range st.Errors {
			if i == 10 {
				break
			}
			fmt.Fprintf(&text, "  %d × [%s] %s\n", e.Count, e.Class, withStatus(e))
		}
	}
	c.Failure = &junitProblem{Type: "requests_failed", Message: msg, Text: text.String()}
	return c
}

func roundTo(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// withStatus names the HTTP status once: messages of HTTP answers often
// start with it already ("404 Not Found: ...").
func withStatus(e result.StepError) string {
	code := strconv.Itoa(e.Status)
	if e.Status == 0 {
		return e.Message
	}
	if strings.HasPrefix(e.Message, code) {
		return "HTTP " + e.Message
	}
	return "HTTP " + code + " " + e.Message
}
