package merge

import "github.com/stampede-load/stampede/internal/result"

// tls sums the segments' handshake counts and merges their duration
// histograms exactly; nil when no segment made a TLS handshake.
func (o Options) tls(rs []*result.Result) (*result.TLS, error) {
	var out *result.TLS
	for _, r := range rs {
		if r.TLS == nil {
			continue
		}
		if out == nil {
			out = &result.TLS{}
		}
		out.Handshakes += r.TLS.Handshakes
		out.Full += r.TLS.Full
		out.Resumed += r.TLS.Resumed
		out.Failed += r.TLS.Failed
	}
	if out == nil {
		return nil, nil
	}
	var err error
	out.Duration, err = o.mergeLatency(rs, "tls duration", func(r *result.Result) []result.Latency {
		if r.TLS == nil {
			return nil
		}
		return []result.Latency{r.TLS.Duration}
	})
	return out, err
}
