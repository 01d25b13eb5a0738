package httpc

// h2c is HTTP/2 over plain TCP with prior knowledge (RFC 9113 section
// 3.3): no TLS, no Upgrade round trip. Under ProtoH2C every plain-HTTP
// request of a user goes to that user's HTTP/2 client (h2.go), which
// dials through the user's dialer like any other connection of that user:
// one connection per endpoint, held by the user, as its HTTP/1.1
// connections are.
