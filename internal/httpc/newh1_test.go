package httpc

import "net"

// NewH1 returns an empty client with a run of its own (tests).
func NewH1() *H1 {
	sh := NewShared(Options{})
	return &H1{ud: &userDial{sh: sh, dialer: &net.Dialer{}}, alpn: alpnH1}
}
