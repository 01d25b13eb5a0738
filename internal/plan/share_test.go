package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharePlan writes a plan with a unique, a sequential and a by_tenant
// unique source over the same file of n rows (ids r0 … r(n-1)).
func sharePlan(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,tenant\n")
	for i := range n {
		fmt.Fprintf(&b, "r%d,%d\n", i, i%2+1)
	}
	if err := os.WriteFile(filepath.Join(dir, "rows.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(dir, "p.yaml")
	src := `name: share
target: http://127.0.0.1:1
data:
  u: {file: rows.csv, pick: unique}
  s: {file: rows.csv, pick: sequential}
  bt: {file: rows.csv, pick: unique, by_tenant: tenant}
tenants: {count: 2}
scenarios:
  a: {steps: [{get: "/{{ data.u.id }}/{{ data.s.id }}/{{ data.bt.id }}"}]}
load: {stages: [{duration: 1s, users: 2}]}
`
	if err := os.WriteFile(pf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return pf
}

func ids(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out
}

// A segment keeps only its stripe of a unique source — the rows it hands
// out when striding over the whole file — so N segments hold the file
// once between them; other sources stay whole.
func TestSegmentLoadsItsShareOfUniqueRows(t *testing.T) {
	pf := sharePlan(t, 10)
	whole, err := LoadFileWith(pf, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	kept := 0
	for i := range 3 {
		p, err := LoadFileWith(pf, LoadOptions{Index: i, Count: 3})
		if err != nil {
			t.Fatal(err)
		}
		u, s, bt := p.Data[0], p.Data[1], p.Data[2]
		var want []string
		for k := i; k < 10; k += 3 {
			want = append(want, whole.Data[0].Rows[k][0])
		}
		if got := ids(u.Rows); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("segment %d/3 kept %v, want rows %v", i, got, want)
		}
		if u.TotalRows != 10 || u.FileRows() != 10 || u.ShareIndex != i || u.ShareCount != 3 {
			t.Errorf("segment %d/3: total %d, file rows %d, share %d/%d", i, u.TotalRows, u.FileRows(), u.ShareIndex, u.ShareCount)
		}
		for _, id := range ids(u.Rows) {
			seen[id]++
		}
		kept += len(u.Rows)
		if len(s.Rows) != 10 || s.ShareCount != 0 {
			t.Errorf("sequential source: %d rows kept, share count %d; a sequential source wraps over every row", len(s.Rows), s.ShareCount)
		}
		if len(bt.Rows) != 10 || bt.ShareCount != 0 {
			t.Errorf("by_tenant source: %d rows kept, share count %d; tenants partition the whole file", len(bt.Rows), bt.ShareCount)
		}
	}
	if kept != 10 || len(seen) != 10 {
		t.Errorf("3 segments kept %d rows, %d distinct; want the 10 rows once", kept, len(seen))
	}
	if len(whole.Data[0].Rows) != 10 || whole.Data[0].ShareCount != 0 || whole.Data[0].FileRows() != 10 {
		t.Errorf("a whole run: %d rows, share count %d", len(whole.Data[0].Rows), whole.Data[0].ShareCount)
	}
}

// A segment whose share of a unique source is empty cannot hand out a row:
// refused at load, as a whole run refuses a file without data rows.
func TestSegmentWithNoRowsIsRefused(t *testing.T) {
	pf := sharePlan(t, 2)
	if _, err := LoadFileWith(pf, LoadOptions{Index: 1, Count: 3}); err != nil {
		t.Fatalf("segment 1/3 has row 1: %v", err)
	}
	_, err := LoadFileWith(pf, LoadOptions{Index: 2, Count: 3})
	if err == nil || !strings.Contains(err.Error(), "has 2 data rows, and segment 2/3 takes rows 2, 5") {
		t.Fatalf("err = %v, want segment 2/3 refused for want of rows", err)
	}
	if _, err := LoadFileWith(pf, LoadOptions{Index: 3, Count: 3}); err == nil {
		t.Error("segment 3/3 accepted")
	}
}

// --data-dir: relative data paths resolve there, not beside the plan, and
// the checks of a local run hold there (present, regular file, columns).
func TestDataDir(t *testing.T) {
	pf := sharePlan(t, 4)
	data := t.TempDir()
	if _, err := LoadFileWith(pf, LoadOptions{DataDir: data}); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(data, "rows.csv")+" not found (paths are relative to "+data+" (--data-dir))") {
		t.Fatalf("err = %v, want the file not found in the data directory", err)
	}
	if err := os.Mkdir(filepath.Join(data, "rows.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFileWith(pf, LoadOptions{DataDir: data}); err == nil || !strings.Contains(err.Error(), "is a directory, not a regular file") {
		t.Fatalf("err = %v, want a directory refused", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "rows.csv"), []byte("name,tenant\nx,1\ny,2\n"), 0o644)
	if _, err := LoadFileWith(pf, LoadOptions{DataDir: other}); err == nil || !strings.Contains(err.Error(), "id") {
		t.Fatalf("err = %v, want the missing column id named", err)
	}
	os.WriteFile(filepath.Join(other, "rows.csv"), []byte("id,tenant\nd0,1\nd1,2\nd2,1\n"), 0o644)
	p, err := LoadFileWith(pf, LoadOptions{DataDir: other, Index: 1, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(p.Data[0].Rows), ","); got != "d1" {
		t.Errorf("segment 1/2 from the data directory kept %s, want d1", got)
	}
}
