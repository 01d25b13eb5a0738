//go:build unix && !darwin && !linux

package run

// getrusage reports ru_maxrss in KiB on the BSDs.
const maxrssUnit = 1024

func maxRSS() int64 { return rusageMaxRSS() }
