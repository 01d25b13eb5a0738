package result

import "testing"

func msg(class string, status int, m string, n int64) StepError {
	return StepError{Class: class, Status: status, Message: m, Count: n}
}

func TestCombineErrorsKeepsTopAndCountsTheRest(t *testing.T) {
	a := []StepError{msg("client_error", 409, "taken", 5), msg("server_error", 503, "busy", 2)}
	b := []StepError{msg("client_error", 409, "taken", 1), msg("server_error", 503, "down", 3)}
	got, other := CombineErrors(2, [][]StepError{a, b}, []map[string]int64{{"server_error": 4}, nil})
	if len(got) != 2 || got[0] != msg("client_error", 409, "taken", 6) || got[1] != msg("server_error", 503, "down", 3) {
		t.Fatalf("kept %+v", got)
	}
	if len(other) != 1 || other["server_error"] != 6 {
		t.Fatalf("other %v, want the cut busy (2) and the inputs' 4", other)
	}
}

func TestCheckErrorCounts(t *testing.T) {
	s := Step{Name: "s", ByClass: map[string]int64{"client_error": 3, "timeout": 1},
		Errors: []StepError{msg("client_error", 409, "x", 2)}, OtherErrors: map[string]int64{"client_error": 1, "timeout": 1}}
	if err := s.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	s.OtherErrors["timeout"] = 0
	if s.CheckErrorCounts() == nil {
		t.Fatal("a class whose messages fall short passed")
	}
	old := Step{Name: "old", ByClass: map[string]int64{"timeout": 4}}
	if err := old.CheckErrorCounts(); err != nil {
		t.Fatalf("a result without messages must pass: %v", err)
	}
}

// A level's steady part: statuses and messages are the difference of two
// snapshots, and each class still sums, even when a message left the table
// in between.
func TestSinceErrors(t *testing.T) {
	before := Step{Name: "s", ByClass: map[string]int64{"client_error": 10},
		Statuses: map[string]int64{"200": 50, "409": 10},
		Errors:   []StepError{msg("client_error", 409, "taken", 7), msg("client_error", 409, "rare", 3)}}
	end := Step{Name: "s", ByClass: map[string]int64{"client_error": 25},
		Statuses:    map[string]int64{"200": 80, "409": 25},
		Errors:      []StepError{msg("client_error", 409, "taken", 20), msg("client_error", 409, "new", 2)},
		OtherErrors: map[string]int64{"client_error": 3}}
	d := SinceErrors(end, before)
	d.ByClass = map[string]int64{"client_error": 15}
	if err := d.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	if d.Statuses["200"] != 30 || d.Statuses["409"] != 15 {
		t.Fatalf("statuses %v", d.Statuses)
	}
	if len(d.Errors) != 2 || d.Errors[0] != msg("client_error", 409, "taken", 13) || d.Errors[1] != msg("client_error", 409, "new", 2) {
		t.Fatalf("errors %+v", d.Errors)
	}
}
