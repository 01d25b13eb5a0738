package ws

import "github.com/stampede-load/stampede/internal/readiness"

// readinessOn: plain connections are read on readiness here.
var readinessOn = readiness.Supported()
