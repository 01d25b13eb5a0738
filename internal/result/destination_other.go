//go:build !unix

package result

import "errors"

const oNonblock = 0

var errNoReader = errors.New("no reader")
