package session

import "testing"

// macOS reports RLIM_INFINITY (1<<63 - 1) as the hard open-files limit
// while a process may open only its soft limit; taking the hard one meant
// no plan was ever refused there.
func TestDarwinOpenFiles(t *testing.T) {
	const rlimInfinity = 1<<63 - 1
	for _, c := range []struct{ soft, hard, want uint64 }{
		{24576, rlimInfinity, 24576},
		{10240, rlimInfinity, 10240},
		{256, 4096, 4096},
		{1024, 1024, 1024},
	} {
		if got := darwinOpenFiles(c.soft, c.hard); got != c.want {
			t.Errorf("darwinOpenFiles(%d, %d) = %d, want %d", c.soft, c.hard, got, c.want)
		}
	}
}
