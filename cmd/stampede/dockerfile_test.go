package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestDockerfileBuild runs the Dockerfile's build command as written (no
// Docker engine runs here) and checks what the distroless run stage needs:
// a static binary with no dynamic loader or shared libraries, carrying the
// version given as a build argument, and a run stage that is not root.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux; the built binary must run here")
	}
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var build string
	var user string
	sc := bufio.NewScanner(strings.NewReader(string(df)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "RUN ") && strings.Contains(line, "go build") {
			build = strings.TrimPrefix(line, "RUN ")
		}
		if strings.HasPrefix(line, "USER ") {
			user = strings.TrimPrefix(line, "USER ")
		}
	}
	if build == "" {
		t.Fatal("Dockerfile has no RUN ... go build line")
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("run stage user %q: expected a non-root uid", user)
	}
	out := filepath.Join(t.TempDir(), "stampede")
	// The stage runs in /src (the repository) with ARG VERSION.
	cmdline := strings.ReplaceAll(build, "${VERSION}", "9.9.9-docker")
	cmdline = regexp.MustCompile(`-o /out/stampede`).ReplaceAllString(cmdline, "-o "+out)
	if !strings.Contains(cmdline, out) {
		t.Fatalf("build line %q does not write /out/stampede", build)
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = "../.."
	// The toolchain running this test, not whichever go is first on PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(runtime.GOROOT(), "bin")+string(os.PathListSeparator)+os.Getenv("PATH")) //nolint:staticcheck // GOROOT of the toolchain running this test, which `go env` on PATH may not be
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary asks for a dynamic loader; distroless/static has none")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
	v, err := exec.Command(out, "version").Output()
	if err != nil || !strings.Contains(string(v), "9.9.9-docker") {
		t.Errorf("version = %q, %v: expected the build argument", v, err)
	}
}
