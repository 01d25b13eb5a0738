package result

import "testing"

// Every counts index maps back to itself through BucketLowest, and the
// library records that value at the same index.
func TestCountsIndexMatchesLibrary(t *testing.T) {
	h := NewHistogram()
	for i := 0; i < CountsLen; i++ {
		v := BucketLowest(i)
		if got := CountsIndex(v); got != i {
			t.Fatalf("CountsIndex(BucketLowest(%d) = %d) = %d", i, v, got)
		}
		if v >= HistLowUS && v <= HistHighUS {
			if err := h.RecordValues(v, int64(i)+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, c := range h.Export().Counts {
		if v := BucketLowest(i); v >= HistLowUS && v <= HistHighUS && c != int64(i)+1 {
			t.Fatalf("index %d (value %d) holds %d in the library, want %d", i, v, c, i+1)
		}
	}
	if top := CountsIndex(HistHighUS); top >= CountsLen {
		t.Fatalf("the highest value's index %d is past the counts (%d)", top, CountsLen)
	}
}
