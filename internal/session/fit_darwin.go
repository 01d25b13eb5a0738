package session

// usableLimit: macOS reports a hard limit of RLIM_INFINITY while the
// kernel allows a process only kern.maxfilesperproc (about 10,000 to
// 24,000); Go's runtime raises the soft limit to that at start, so there
// the soft limit is the real one.
func usableLimit(soft, hard uint64) uint64 { return darwinOpenFiles(soft, hard) }
