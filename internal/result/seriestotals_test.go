package result

import (
	"strings"
	"testing"
)

// A checkpoint whose totals counted the open second and whose series did
// not (kill -9 at 13 s: totals.requests 110,792, the series 110,779) is
// refused on read, naming the disagreement: before, report took it as
// the truth. A complete result, and one whose series agree, read as ever.
func TestReadRefusesPartialWhoseSeriesMissTotals(t *testing.T) {
	r := withSeries(small(t, 4, true), 3)
	r.Series.OK = []int64{1, 2, 1}
	data, err := encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(data); err != nil {
		t.Fatalf("a checkpoint whose series add up: %v", err)
	}

	r.Series.OK = []int64{1, 2, 0} // the open interval's success left out
	data, _ = encode(r)
	_, err = Decode(data)
	if err == nil || !strings.Contains(err.Error(), "series.ok adds up to 3, but totals.successful is 4") {
		t.Fatalf("a checkpoint whose series miss a success: %v", err)
	}

	r.Series.OK = []int64{1, 2, 1}
	r.Series.Failed["timeout"] = []int64{0, 0, 1} // a failure the totals lack
	data, _ = encode(r)
	if _, err = Decode(data); err == nil || !strings.Contains(err.Error(), "series.failed.timeout adds up to 1, but totals.by_class.timeout is 0") {
		t.Fatalf("a checkpoint whose series hold a failure the totals lack: %v", err)
	}
}
