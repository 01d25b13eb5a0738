package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/stampede-load/stampede/internal/result"
)

// JSON writes r as indented JSON, laid out like the result file itself so
// "report --format json" and the saved file diff cleanly.
func JSON(w io.Writer, r *result.Result) error {
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}
