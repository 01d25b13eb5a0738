package plan

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// The files of the tls section are read when the plan loads, as its data
// files are, so `validate` refuses what `run` would and the message names
// the key's file:line:col: a CA bundle must hold a PEM certificate, and a
// client certificate and its key must load as a pair.

// maxTLSFile bounds what is read of a CA bundle, certificate or key: a
// system's whole bundle of roots is well under a megabyte.
const maxTLSFile = 16 << 20

// tlsFiles checks the files f's ca_file, cert_file and key_file name (t
// holds them resolved), each problem reported at the key's value.
func (p *parser) tlsFiles(f map[string]kv, t *TLS) {
	where := "the plan's directory"
	if t.CAFile != "" {
		if msg := caFileProblem(p.open, "tls ca_file", t.CAFile, where); msg != "" {
			p.errf(f["ca_file"].v, "%s", msg)
		}
	}
	if t.CertFile == "" || t.KeyFile == "" {
		return // tls refuses one without the other
	}
	cert, msg := readTLSFile(p.open, "tls cert_file", t.CertFile, where)
	if msg != "" {
		p.errf(f["cert_file"].v, "%s", msg)
	}
	key, kmsg := readTLSFile(p.open, "tls key_file", t.KeyFile, where)
	if kmsg != "" {
		p.errf(f["key_file"].v, "%s", kmsg)
	}
	if msg != "" || kmsg != "" {
		return
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		p.errf(f["cert_file"].v, "tls cert_file %s and key_file %s do not load as a client certificate: %v", t.CertFile, t.KeyFile, err)
	}
}

// CheckCAFile is the rule for a plan's tls.ca_file applied to a CA bundle
// named outside a plan (url --ca-file, named by label): path can be read
// and holds at least one PEM certificate. Relative paths are read from the
// current directory.
func CheckCAFile(label, path string) error {
	if msg := caFileProblem(openFile, label, path, "the current directory"); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// caFileProblem says what is wrong with the CA bundle at path, or "".
func caFileProblem(open func(string) (io.ReadCloser, error), label, path, where string) string {
	b, msg := readTLSFile(open, label, path, where)
	if msg != "" {
		return msg
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Sprintf("%s %s holds no PEM certificate: expected the CA certificates to trust, as -----BEGIN CERTIFICATE----- blocks", label, path)
	}
	return ""
}

// readTLSFile reads a file the tls settings name (label: how the user
// named the setting), or says why it cannot; where is what relative paths
// are read from.
func readTLSFile(open func(string) (io.ReadCloser, error), label, path, where string) ([]byte, string) {
	rc, err := open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Sprintf("%s %s not found (relative paths are read from %s)", label, path, where)
		}
		return nil, fmt.Sprintf("cannot read %s %s: %s", label, path, fileErr(err))
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxTLSFile+1))
	if err != nil {
		return nil, fmt.Sprintf("cannot read %s %s: %s", label, path, fileErr(err))
	}
	if len(b) > maxTLSFile {
		return nil, fmt.Sprintf("%s %s is larger than %d MiB: expected a PEM file", label, path, maxTLSFile>>20)
	}
	return b, ""
}
