//go:build !unix

package hostile

// smallReceiveBuffer keeps the default buffer where there is no portable
// socket option: the never-reading server then blocks later, not never.
func smallReceiveBuffer(fd uintptr) error { return nil }
