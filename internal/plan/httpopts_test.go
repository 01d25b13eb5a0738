package plan

import (
	"strings"
	"testing"
)

func TestHTTPOptions(t *testing.T) {
	base := "target: http://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	cases := []struct {
		yaml    string
		sources int
		reuse   ConnReuse
		maxConn int
		err     string
		why     string
	}{
		{"", 0, ReuseKeepAlive, 0, "", "defaults: keep-alive, no sources, no cap"},
		{"http: {source_addresses: 127.0.0.0/29}\n", 6, ReuseKeepAlive, 0, "", "a /29 gives its 6 usable addresses"},
		{"http: {source_addresses: [127.0.0.2, 127.0.0.3/32], connection: per-iteration, max_connections_per_host: 8}\n", 2, ReusePerIteration, 8, "", "list of addresses and CIDRs"},
		{"http: {source_addresses: 127.0.0.999}\n", 0, 0, 0, `bad source address "127.0.0.999"`, "bad address"},
		{"http: {connection: sometimes}\n", 0, 0, 0, `bad connection "sometimes": expected keep-alive, per-iteration or per-request`, "bad policy"},
		{"http: {source_adresses: 127.0.0.2}\n", 0, 0, 0, `did you mean "source_addresses"?`, "typo hint"},
	}
	for _, c := range cases {
		p, err := Parse("p.yaml", []byte(base+c.yaml), nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want it to contain %q", c.why, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if len(p.HTTP.SourceAddresses) != c.sources || p.HTTP.Reuse != c.reuse || p.HTTP.MaxConnsPerHost != c.maxConn {
			t.Errorf("%s: got %+v", c.why, p.HTTP)
		}
	}
}

func TestHTTPSizeOptions(t *testing.T) {
	base := "target: http://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	cases := []struct {
		yaml         string
		header, body int
		err          string
	}{
		{"", 0, 0, ""},
		{"http: {max_header_bytes: 8192, max_kept_body_bytes: 2MiB}\n", 8192, 2 << 20, ""},
		{"http: {max_header_bytes: 64 KiB, max_kept_body_bytes: 10MB}\n", 64 << 10, 10_000_000, ""},
		{"http: {max_kept_body_bytes: 1GiB}\n", 0, 1 << 30, ""},
		{"http: {max_header_bytes: 100}\n", 0, 0, `bad max_header_bytes "100": expected a size from 1024 bytes to 1GiB`},
		{"http: {max_kept_body_bytes: 2GiB}\n", 0, 0, `bad max_kept_body_bytes "2GiB"`},
		{"http: {max_kept_body_bytes: -1}\n", 0, 0, `bad max_kept_body_bytes "-1"`},
		{"http: {max_kept_body_bytes: lots}\n", 0, 0, `bad max_kept_body_bytes "lots"`},
		{"http: {max_header_byte: 1KiB}\n", 0, 0, `did you mean "max_header_bytes"?`},
	}
	for _, c := range cases {
		p, err := Parse("p.yaml", []byte(base+c.yaml), nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want it to contain %q", c.yaml, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if p.HTTP.MaxHeaderBytes != c.header || p.HTTP.MaxKeptBodyBytes != c.body {
			t.Errorf("%q: header %d, body %d; want %d, %d", c.yaml, p.HTTP.MaxHeaderBytes, p.HTTP.MaxKeptBodyBytes, c.header, c.body)
		}
	}
}

func TestHTTPVersion(t *testing.T) {
	base := "target: https://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	cases := []struct {
		yaml string
		want HTTPVersion
		err  string
	}{
		{"", VersionAuto, ""},
		{"http: {version: auto}\n", VersionAuto, ""},
		{"http: {version: http/1.1}\n", VersionHTTP1, ""},
		{"http: {version: h2}\n", VersionH2, ""},
		{"http: {version: h2c}\n", VersionH2C, ""},
		{"http: {version: http/2}\n", 0, `p.yaml:4:17: bad http version "http/2": write h2 for HTTP/2 over https, or h2c`},
		{"http: {version: spdy}\n", 0, `p.yaml:4:17: bad http version "spdy": expected auto (https negotiates h2 or http/1.1), http/1.1, h2`},
	}
	for _, c := range cases {
		p, err := Parse("p.yaml", []byte(base+c.yaml), nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want it to contain %q", c.yaml, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if p.HTTP.Version != c.want || p.HTTP.H2C != (c.want == VersionH2C) {
			t.Errorf("%q: version %v (h2c %v), want %v", c.yaml, p.HTTP.Version, p.HTTP.H2C, c.want)
		}
	}
}

func TestH2Connections(t *testing.T) {
	base := "target: https://127.0.0.1:1\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	for _, c := range []struct {
		yaml   string
		shared bool
		err    string
	}{
		{"", false, ""},
		{"http: {h2_connections: per-user}\n", false, ""},
		{"http: {version: h2, h2_connections: shared}\n", true, ""},
		{"http: {h2_connections: pooled}\n", false, `p.yaml:4:24: bad h2_connections "pooled": expected per-user`},
		{"http: {h2_connections: shared, connection: per-request}\n", false, `p.yaml:4:24: h2_connections: shared cannot be combined with connection: per-request`},
		{"http: {h2_connections: shared, connection: per-iteration}\n", true, ""},
	} {
		p, err := Parse("p.yaml", []byte(base+c.yaml), nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want it to contain %q", c.yaml, err, c.err)
			}
			continue
		}
		if err != nil || p.HTTP.H2Shared != c.shared {
			t.Errorf("%q: %v, shared %v", c.yaml, err, p != nil && p.HTTP.H2Shared)
		}
	}
}
