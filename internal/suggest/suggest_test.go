package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b         string
		swaps, plain int
	}{
		{"", "", 0, 0},
		{"", "abc", 3, 3},
		{"postgres", "postgres", 0, 0},
		{"postgress", "postgres", 1, 1},
		{"postrges", "postgres", 1, 2}, // a swap of neighbours
		{"kitten", "sitting", 3, 3},
		{"ca", "abc", 3, 3}, // OSA, not full Damerau: no edit of a swapped pair
		{"héllo", "hello", 1, 1},
	} {
		if got := Distance(c.a, c.b); got != c.swaps {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.swaps)
		}
		if got := distance([]rune(c.a), []rune(c.b), false); got != c.plain {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.plain)
		}
	}
	// Key counts bytes: an accented letter is two of them.
	if got := distance([]byte("héllo"), []byte("hello"), false); got != 2 {
		t.Errorf("byte distance = %d, want 2", got)
	}
}

func TestKey(t *testing.T) {
	valid := []string{"scenarios", "load", "target", "thresholds"}
	for _, c := range []struct{ key, want string }{
		{"scenarios", "scenarios"},
		{"Scenarioz", "scenarios"},
		{"trget", "target"},
		{"thresh", "thresholds"}, // a prefix, though four edits away
		{"loads", "load"},
		{"zzz", ""},
		{"t", ""}, // too short to be a prefix hint
	} {
		if got := Key(c.key, valid); got != c.want {
			t.Errorf("Key(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	cands := []string{"postgres", "redis", "prometheus", "process", "host"}
	for _, c := range []struct{ s, want string }{
		{"postrges", "postgres"},
		{"PostGres", "postgres"},
		{"rediss", "redis"},
		{"hots", "host"},
		{"mysql", ""},
		{"promethues_http_requests", ""}, // too far from every kind
	} {
		if got := Closest(c.s, cands); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.s, got, c.want)
		}
	}
	if got := Closest("x", nil); got != "" {
		t.Errorf("Closest with no candidates = %q", got)
	}
}
