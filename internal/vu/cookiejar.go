package vu

import (
	"net/http/cookiejar"

	"golang.org/x/net/publicsuffix"
)

// newJar is a user's cookie jar. The public-suffix list is what keeps a
// server from setting a cookie for a whole registry such as co.uk or
// github.io, which every other site under it would then be sent, as
// browsers refuse.
func newJar() *cookiejar.Jar {
	// cookiejar.New returns no error for any options (its error is always nil).
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	return jar
}
