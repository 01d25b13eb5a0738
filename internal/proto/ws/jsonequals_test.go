package ws

import "strings"

// JSONEquals matches messages whose value at path (dotted) equals value.
func JSONEquals(path, value string) Matcher {
	return Matcher{Path: strings.Split(path, "."), Equals: value}
}
