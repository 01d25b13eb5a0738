//go:build !race

package vu

const raceEnabled = false
