package e2e

import (
	"os"
	"testing"

	"github.com/stampede-load/stampede/internal/e2etest"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/convtmp")) }
