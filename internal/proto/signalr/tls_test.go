package signalr

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/sample"
)

// startH2 starts h as a TLS server that speaks HTTP/2 to clients offering
// it, as ASP.NET Core hosts and Azure SignalR Service do.
func startH2(h http.Handler) *httptest.Server {
	ts := httptest.NewUnstartedServer(h)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	return ts
}

// SignalR over wss against a hub that speaks HTTP/2: negotiate may go over
// h2, the upgrade must not. Both ways a run configures TLS are tried: the
// config alone (the client clones it for negotiate) and a negotiate client
// sharing the very config the upgrade gets. Before each user had its own
// clone, net/http's "h2" leaked into the upgrade and every connection
// failed as a reset.
func TestTLSHubOverHTTP2(t *testing.T) {
	ts := startHub(t, startH2, nil)
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	shared := &tls.Config{RootCAs: roots}
	// The HTTP users of a run use the plan's config first.
	users := &http.Transport{TLSClientConfig: shared, ForceAttemptHTTP2: true}
	t.Cleanup(users.CloseIdleConnections)
	resp, err := (&http.Client{Transport: users}).Post(ts.URL+"/hubs/kitchen/negotiate?negotiateVersion=1", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || !slices.Contains(shared.NextProtos, "h2") {
		t.Fatalf("proto %s, config offers %v: the test needs an h2 hub and a config net/http has used", resp.Proto, shared.NextProtos)
	}
	for _, tc := range []struct {
		name string
		o    *Options
	}{
		{"config only", &Options{TLS: shared, Stats: NewStats()}},
		{"negotiate client sharing the config", &Options{HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: shared, ForceAttemptHTTP2: true}}, TLS: shared, Stats: NewStats()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			r := &rec{}
			o.Recorder = r
			noLeak(t, o)
			t.Cleanup(o.CloseIdleConnections)
			for i := 0; i < 3; i++ {
				c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o)
				if err != nil {
					t.Fatalf("connect %d over wss to an HTTP/2 hub: %v", i, err)
				}
				res, err := c.Invoke(ctx5(t), "JoinRestaurant", "7")
				if err != nil || !strings.Contains(string(res), "joined 7") {
					t.Errorf("invoke over wss = %s, %v", res, err)
				}
				c.Close()
			}
			if got := r.classes("upgrade"); len(got) != 3 || slices.ContainsFunc(got, func(c sample.Class) bool { return c != sample.OK }) {
				t.Errorf("upgrades recorded %v, errors %v", got, r.errs)
			}
			if o.Stats.Opened.Load() != 3 || o.Stats.Open.Load() != 0 {
				t.Errorf("opened %d, open %d", o.Stats.Opened.Load(), o.Stats.Open.Load())
			}
		})
	}
}
