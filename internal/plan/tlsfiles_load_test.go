package plan

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned is a PEM certificate and its PEM private key.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IsCA:         true,
		KeyUsage:     x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// The files of the tls section are checked when the plan loads, as data
// files are: validate and run both load it, so validate refuses what run
// would, with the key's file:line:col (run used to refuse a missing or
// non-PEM ca_file with neither, and validate said ok).
func TestTLSFilesCheckedAtLoad(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t)
	_, otherKey := selfSigned(t)
	files := map[string][]byte{
		"ca.pem":         cert,
		"client.pem":     cert,
		"client-key.pem": key,
		"other-key.pem":  otherKey,
		"customers.csv":  []byte("id\n1\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const rest = "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, users: 1}]\n"
	for _, c := range []struct {
		tls  string
		want string // "" loads
	}{
		{"tls: {ca_file: ca.pem}", ""},
		{"tls: {ca_file: ca.pem, cert_file: client.pem, key_file: client-key.pem}", ""},
		{"tls: {ca_file: nope.pem}", "plan.yaml:2:16: tls ca_file " + filepath.Join(dir, "nope.pem") + " not found"},
		{"tls: {ca_file: customers.csv}", "plan.yaml:2:16: tls ca_file " + filepath.Join(dir, "customers.csv") + " holds no PEM certificate"},
		{"tls: {ca_file: .}", "plan.yaml:2:16: cannot read tls ca_file " + dir + ": " + dir + " is a directory, not a regular file"},
		{"tls: {cert_file: nope.pem, key_file: client-key.pem}", "plan.yaml:2:18: tls cert_file " + filepath.Join(dir, "nope.pem") + " not found"},
		{"tls: {cert_file: client.pem, key_file: nope.pem}", "plan.yaml:2:40: tls key_file " + filepath.Join(dir, "nope.pem") + " not found"},
		{"tls: {cert_file: client.pem, key_file: other-key.pem}", "plan.yaml:2:18: tls cert_file " + filepath.Join(dir, "client.pem") + " and key_file " + filepath.Join(dir, "other-key.pem") + " do not load as a client certificate"},
		{"tls: {cert_file: customers.csv, key_file: client-key.pem}", "plan.yaml:2:18: tls cert_file " + filepath.Join(dir, "customers.csv") + " and key_file"},
	} {
		path := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(path, []byte("target: http://127.0.0.1:9\n"+c.tls+"\n"+rest), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadFileWith(path, LoadOptions{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.tls, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: loads; want %q", c.tls, c.want)
		case c.want != "" && !strings.HasPrefix(err.Error(), filepath.Join(dir, c.want)):
			t.Errorf("%s:\n got %v\nwant %s…", c.tls, err, filepath.Join(dir, c.want))
		}
	}
}
