package run

// getrusage reports ru_maxrss in bytes on macOS.
const maxrssUnit = 1
