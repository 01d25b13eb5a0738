package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// url's --ca-file is held to the same rule, in the flag's words.
func TestCheckCAFile(t *testing.T) {
	dir := t.TempDir()
	cert, _ := selfSigned(t)
	ca, csv := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "customers.csv")
	os.WriteFile(ca, cert, 0o600)
	os.WriteFile(csv, []byte("id\n1\n"), 0o600)
	if err := CheckCAFile("--ca-file", ca); err != nil {
		t.Errorf("a PEM bundle: %v", err)
	}
	for path, want := range map[string]string{
		csv:                            "--ca-file " + csv + " holds no PEM certificate",
		filepath.Join(dir, "nope.pem"): "--ca-file " + filepath.Join(dir, "nope.pem") + " not found",
	} {
		if err := CheckCAFile("--ca-file", path); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want %s…", path, err, want)
		}
	}
}
