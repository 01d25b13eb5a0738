package collect

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The servers .ci/services.sh starts; the environment may point elsewhere.
const (
	defaultTestPG    = "postgres://stampede:stampede@127.0.0.1:5432/stampede?sslmode=disable"
	defaultTestRedis = "127.0.0.1:6379"
)

// unavailable skips a test whose server is not running on a developer's
// machine, but fails it in CI, where .ci/run starts the servers and a skip
// would hide that the monitors went untested.
func unavailable(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not reachable in CI (.ci/services.sh should have started it): %v", what, err)
	}
	t.Skipf("%s not reachable (run .ci/services.sh): %v", what, err)
}

func testPG(t *testing.T) string {
	t.Helper()
	u := os.Getenv("STAMPEDE_TEST_PG")
	if u == "" {
		u = defaultTestPG
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		unavailable(t, "PostgreSQL", err)
	}
	c.Close(ctx)
	return u
}

func testRedis(t *testing.T) string {
	t.Helper()
	a := os.Getenv("STAMPEDE_TEST_REDIS")
	if a == "" {
		a = defaultTestRedis
	}
	c, err := net.DialTimeout("tcp", a, 2*time.Second)
	if err != nil {
		unavailable(t, "Redis", err)
	}
	c.Close()
	return a
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSamples waits until series key has n points, so tests do not depend
// on how fast a loaded machine samples.
func waitSamples(t *testing.T, set *Set, key string, n int) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%d samples of %s", n, key), func() bool {
		ser, _ := set.Snapshot()
		return len(ser[key].V) >= n
	})
}
