package vu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

func shareFile(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id\n")
	for i := range n {
		fmt.Fprintf(&b, "r%d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "rows.csv"), []byte(b.String()), 0o644)
	pf := filepath.Join(dir, "p.yaml")
	os.WriteFile(pf, []byte(`name: share
target: http://127.0.0.1:1
data: {u: {file: rows.csv, pick: unique}}
scenarios: {a: {steps: [{get: "/{{ data.u.id }}"}]}}
load: {stages: [{duration: 1s, users: 1}]}
`), 0o644)
	return pf
}

// drain takes rows until the feeder is exhausted.
func drain(t *testing.T, f *Feeder) []string {
	t.Helper()
	var got []string
	for range 1000 {
		row, err := f.Next(nil)
		if errors.Is(err, ErrDataExhausted) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, row[0])
	}
	t.Fatal("feeder never ran out")
	return nil
}

// A segment that loaded only its share hands out exactly the rows, in the
// same order, that it handed out when it loaded the whole file and strode
// over it; and N segments together hand out a one-process run's rows, each
// once.
func TestShareFeedsAsStriding(t *testing.T) {
	for _, n := range []int{1, 7, 9, 10} {
		pf := shareFile(t, n)
		whole, err := plan.LoadFileWith(pf, plan.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		one := drain(t, NewFeeder(whole.Data[0]))
		var all []string
		for _, count := range []int{2, 3} {
			all = all[:0]
			for i := range min(count, n) {
				full := NewFeeder(whole.Data[0])
				full.Stride, full.Offset = int64(count), int64(i)
				before := drain(t, full)

				p, err := plan.LoadFileWith(pf, plan.LoadOptions{Index: i, Count: count})
				if err != nil {
					t.Fatal(err)
				}
				if kept := len(p.Data[0].Rows); kept != len(before) {
					t.Errorf("%d rows, segment %d/%d: kept %d rows, hands out %d", n, i, count, kept, len(before))
				}
				sh := NewFeeder(p.Data[0])
				sh.Stride, sh.Offset = int64(count), int64(i) // as Program.SetSegment sets it
				got := drain(t, sh)
				if strings.Join(got, ",") != strings.Join(before, ",") {
					t.Errorf("%d rows, segment %d/%d: share hands out %v, striding the whole file %v", n, i, count, got, before)
				}
				all = append(all, got...)
			}
			if len(all) != len(one) {
				t.Errorf("%d rows, %d segments: %d rows handed out in all, one process hands out %d", n, count, len(all), len(one))
			}
			seen := map[string]bool{}
			for _, id := range all {
				if seen[id] {
					t.Errorf("%d rows, %d segments: %s handed out twice", n, count, id)
				}
				seen[id] = true
			}
		}
	}
}

// A share run as another segment would send that segment's rows too:
// refused rather than handed out.
func TestShareRunAsAnotherSegment(t *testing.T) {
	p, err := plan.LoadFileWith(shareFile(t, 6), plan.LoadOptions{Index: 1, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFeeder(p.Data[0])
	f.Stride, f.Offset = 3, 0
	if _, err := f.Next(nil); err == nil || !strings.Contains(err.Error(), "loaded as segment 1/3's share") {
		t.Errorf("err = %v", err)
	}
	f.Stride, f.Offset = 3, 1
	got := drain(t, f)
	if strings.Join(got, ",") != "r1,r4" {
		t.Errorf("segment 1/3 handed out %v", got)
	}
	if _, err := f.Next(nil); err == nil || !strings.Contains(err.Error(), "segment 1/3's share: 2 of the file's 6 rows") {
		t.Errorf("exhaustion: %v", err)
	}
}
