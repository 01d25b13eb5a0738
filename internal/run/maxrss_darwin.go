package run

// getrusage reports ru_maxrss in bytes on macOS.
const maxrssUnit = 1

func maxRSS() int64 { return rusageMaxRSS() }
