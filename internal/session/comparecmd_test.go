package session

import "testing"

func TestParseShare(t *testing.T) {
	for in, want := range map[string]float64{"5%": 0.05, "12.5 %": 0.125, "0.05": 0.05} {
		if got, err := parseShare(in); err != nil || got != want {
			t.Errorf("parseShare(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "0%", "100%", "1", "-5%", "NaN", ""} {
		if _, err := parseShare(in); err == nil {
			t.Errorf("parseShare(%q) accepted", in)
		}
	}
}

// Two result files of one name are labelled by their whole paths.
func TestCompareLabels(t *testing.T) {
	got, err := compareLabels("", []string{"a/run.json", "b/run.json", "c/other.json"})
	if err != nil || got[0] != "a/run.json" || got[1] != "b/run.json" || got[2] != "other" {
		t.Errorf("compareLabels = %q, %v", got, err)
	}
	if _, err := compareLabels("x, y", []string{"a.json"}); err == nil {
		t.Error("two labels for one file accepted")
	}
}
