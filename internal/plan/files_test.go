package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePlanWith writes a plan sending body (a request step's body keys)
// into a directory of its own, and returns the plan's path.
func writePlanWith(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	src := "target: http://127.0.0.1:1\nscenarios:\n  s:\n    steps:\n      - {post: /, " + body + "}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A plan reads the files it sends only from beside it (or --data-dir, or
// a directory --allow-files names), and never from /proc, /sys or /dev:
// body_file read /proc/self/environ and ../../etc/passwd and sent them.
func TestPlanFilesStayBesideThePlan(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("s3cr3t"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := func(planPath string) string {
		r, err := filepath.Rel(filepath.Dir(planPath), outside)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := map[string]func(planPath string) string{
		"proc":         func(string) string { return "body_file: /proc/self/environ" },
		"absolute":     func(string) string { return "body_file: " + outside },
		"dot-dot":      func(p string) string { return "body_file: " + rel(p) },
		"multipart":    func(string) string { return "multipart: {f: {file: " + outside + "}}" },
		"symlink-out":  func(p string) string { return "body_file: link.txt" },
		"symlink-proc": func(p string) string { return "body_file: env.txt" },
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			path := writePlanWith(t, "")
			src := strings.Replace(mustRead(t, path), "{post: /, ", "{post: /, "+body(path), 1)
			os.WriteFile(path, []byte(src), 0o644)
			os.Symlink(outside, filepath.Join(filepath.Dir(path), "link.txt"))
			os.Symlink("/proc/self/environ", filepath.Join(filepath.Dir(path), "env.txt"))
			_, err := LoadFileWith(path, LoadOptions{})
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a plan error", err)
			}
			if p := pe.Problems[0].Pos; p.Line != 5 || p.Col < 10 {
				t.Errorf("problem at %d:%d, want line 5 at the file's name", p.Line, p.Col)
			}
			if !strings.Contains(err.Error(), "cannot read") {
				t.Errorf("err = %v", err)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		path := writePlanWith(t, "body_file: "+outside)
		p, err := LoadFileWith(path, LoadOptions{AllowFiles: []string{filepath.Dir(outside)}})
		if err != nil {
			t.Fatalf("--allow-files did not allow %s: %v", outside, err)
		}
		if got := string(p.Scenarios[0].Steps[0].StaticBody); got != "s3cr3t" {
			t.Errorf("body %q", got)
		}
	})
	t.Run("proc-even-if-allowed", func(t *testing.T) {
		path := writePlanWith(t, "body_file: /proc/self/environ")
		if _, err := LoadFileWith(path, LoadOptions{AllowFiles: []string{"/"}}); err == nil || !strings.Contains(err.Error(), "/proc") {
			t.Errorf("err = %v, want /proc refused", err)
		}
	})
}

// A data file is held to the same directories as body_file.
func TestDataFilesStayBesideThePlan(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "rows.csv")
	os.WriteFile(outside, []byte("id\n1\n"), 0o644)
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.yaml")
	src := "target: http://127.0.0.1:1\ndata: {d: {file: " + outside + "}}\nscenarios: {s: {steps: [{get: \"/{{ data.d.id }}\"}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	os.WriteFile(path, []byte(src), 0o644)
	if _, err := LoadFileWith(path, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "plan.yaml:2:") || !strings.Contains(err.Error(), "--allow-files") {
		t.Errorf("err = %v, want the data file refused at 2:col with the flag named", err)
	}
	if _, err := LoadFileWith(path, LoadOptions{DataDir: filepath.Dir(outside)}); err != nil {
		t.Errorf("--data-dir did not allow its file: %v", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
