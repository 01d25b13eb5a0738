package convert

import "github.com/stampede-load/stampede/internal/convert/jmx"

// JMXOptions and JMXResult are package jmx's, for the command, which
// reaches conversions through this package only.
type (
	JMXOptions = jmx.Options
	JMXResult  = jmx.Result
)

// JMX converts an Apache JMeter test plan (.jmx) into a plan, checked by
// the plan loader before it is returned.
func JMX(data []byte, o JMXOptions) ([]byte, JMXResult, error) { return jmx.Convert(data, o) }
