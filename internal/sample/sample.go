// Package sample defines the outcome of one request: its failure class and
// its latency. It is the vocabulary shared by the engine, the metrics and
// the result file, and imports no other package of ours.
package sample

// Class is the outcome of one request. Every request has exactly one class,
// so the failure classes of a run always sum to its failed count.
type Class uint8

const (
	OK Class = iota
	RateLimited
	ClientError
	ServerError
	Timeout
	ConnRefused
	ConnReset
	DNS
	TLS
	Check
	Capture
	Dropped
	Interrupted
	PortExhausted
	FDLimit
	Other
	// Refused is a request the server refused unprocessed (HTTP/2
	// REFUSED_STREAM, or a GOAWAY below its stream). Last, so the indices
	// of the classes before it stay as they were.
	Refused
	// Protocol is a server that broke its protocol (a SignalR message the
	// official clients refuse): the server's fault, not the network's.
	Protocol
	// ServerClose is a connection the server ended gracefully (a SignalR
	// Close without an error) while the scenario wanted it open.
	ServerClose
	// Redirects is a request whose redirects did not end: a loop, more
	// hops than its limit, a Location that cannot be followed, or a 3xx
	// the event-loop engine cannot follow.
	Redirects
	// Proxy is a request the proxy refused: 407 (proxy authentication),
	// any other answer to CONNECT than 2xx, or a proxy setting that cannot
	// be used.
	Proxy
	NumClasses // not a class: the number of classes
)

var names = [NumClasses]string{
	OK:            "ok",
	RateLimited:   "rate_limited",
	ClientError:   "client_error",
	ServerError:   "server_error",
	Timeout:       "timeout",
	ConnRefused:   "conn_refused",
	ConnReset:     "conn_reset",
	DNS:           "dns",
	TLS:           "tls",
	Check:         "check",
	Capture:       "capture",
	Dropped:       "dropped",
	Interrupted:   "interrupted",
	PortExhausted: "port_exhausted",
	FDLimit:       "fd_limit",
	Other:         "other",
	Refused:       "refused",
	Protocol:      "protocol",
	ServerClose:   "server_close",
	Redirects:     "redirects",
	Proxy:         "proxy",
}

// String returns the class's name as it appears in result files.
func (c Class) String() string {
	if c < NumClasses {
		return names[c]
	}
	return "invalid"
}

// Failed reports whether the class counts as a failed request.
func (c Class) Failed() bool { return c != OK }

// ParseClass returns the class with the given result-file name.
func ParseClass(name string) (Class, bool) {
	for i, n := range names {
		if n == name {
			return Class(i), true
		}
	}
	return 0, false
}

// FailureClasses lists every failure class in the order reports show them.
func FailureClasses() []Class {
	out := make([]Class, 0, NumClasses-1)
	for c := Class(1); c < NumClasses; c++ {
		out = append(out, c)
	}
	return out
}

// IsConnection reports whether the class is a connection-level failure
// (the request never got an HTTP answer because of the network path).
func (c Class) IsConnection() bool {
	switch c {
	case ConnRefused, ConnReset, DNS, TLS, PortExhausted, FDLimit:
		return true
	}
	return false
}

// FromStatus classifies an HTTP status code that the checks did not reject.
func FromStatus(code int) Class {
	switch {
	case code == 429:
		return RateLimited
	case code >= 500:
		return ServerError
	case code >= 400:
		return ClientError
	}
	return OK
}
