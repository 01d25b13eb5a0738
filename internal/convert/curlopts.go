package convert

// curl's options that take a value, by long name, and the short letters
// that stand for them (curl 8's option table). Any other option is a
// switch: it changes what curl shows or how it connects, and takes no
// value, so the word after it is not swallowed and is not the URL either.
var curlShort = map[byte]string{
	'A': "user-agent", 'b': "cookie", 'c': "cookie-jar", 'C': "continue-at", 'd': "data",
	'D': "dump-header", 'e': "referer", 'E': "cert", 'F': "form", 'H': "header", 'K': "config",
	'm': "max-time", 'o': "output", 'P': "ftp-port", 'Q': "quote", 'r': "range", 't': "telnet-option",
	'T': "upload-file", 'u': "user", 'U': "proxy-user", 'w': "write-out", 'x': "proxy", 'X': "request",
	'y': "speed-time", 'Y': "speed-limit", 'z': "time-cond",
}

var curlShortFlag = map[byte]string{'G': "get", 'I': "head", 'k': "insecure", 'L': "location"}

var curlValued = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range curlShort {
		m[n] = true
	}
	for _, n := range []string{
		"abstract-unix-socket", "alt-svc", "aws-sigv4", "cacert", "capath", "cert-type", "ciphers",
		"connect-timeout", "connect-to", "create-file-mode", "crlfile", "curves", "data-ascii", "data-binary",
		"data-raw", "data-urlencode", "delegation", "dns-interface", "dns-ipv4-addr", "dns-ipv6-addr",
		"dns-servers", "doh-url", "ech", "egd-file", "engine", "etag-compare", "etag-save", "expect100-timeout",
		"form-string", "ftp-account", "ftp-alternative-to-user", "ftp-method", "ftp-ssl-ccc-mode",
		"happy-eyeballs-timeout-ms", "haproxy-clientip", "hostpubmd5", "hostpubsha256", "hsts", "interface",
		"ip-tos", "ipfs-gateway", "json", "keepalive-cnt", "keepalive-time", "key", "key-type", "krb", "libcurl",
		"limit-rate", "local-port", "login-options", "mail-auth", "mail-from", "mail-rcpt", "max-filesize",
		"max-redirs", "netrc-file", "noproxy", "oauth2-bearer", "output-dir", "parallel-max", "pass",
		"pinnedpubkey", "preproxy", "proto", "proto-default", "proto-redir", "proxy-cacert", "proxy-capath",
		"proxy-cert", "proxy-cert-type", "proxy-ciphers", "proxy-crlfile", "proxy-header", "proxy-key",
		"proxy-key-type", "proxy-pass", "proxy-pinnedpubkey", "proxy-service-name", "proxy-tls13-ciphers",
		"proxy-tlsauthtype", "proxy-tlspassword", "proxy-tlsuser", "proxy1.0", "pubkey", "random-file", "rate",
		"request-target", "resolve", "retry", "retry-delay", "retry-max-time", "sasl-authzid", "service-name",
		"sigalgs", "socks4", "socks4a", "socks5", "socks5-gssapi-service", "socks5-hostname", "stderr",
		"tftp-blksize", "tls-max", "tls13-ciphers", "tlsauthtype", "tlspassword", "tlsuser", "trace",
		"trace-ascii", "trace-config", "unix-socket", "url", "url-query", "variable", "vlan-priority",
	} {
		m[n] = true
	}
	return m
}()
