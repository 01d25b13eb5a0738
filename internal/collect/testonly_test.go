package collect

import (
	"errors"
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Fatal returns an error naming every error-severity problem, or nil.
func Fatal(problems []Problem) error {
	var msgs []string
	for _, p := range problems {
		if p.Severity == SeverityError {
			msgs = append(msgs, p.Message)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// ParseMetricsText parses a Prometheus text exposition into families, as
// a scrape would; for fixtures and files saved from an exporter.
func ParseMetricsText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}
