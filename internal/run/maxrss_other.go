//go:build unix && !darwin

package run

// getrusage reports ru_maxrss in KiB on Linux and the BSDs.
const maxrssUnit = 1024
