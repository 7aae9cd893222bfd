//go:build race

package httpdate_test

// raceEnabled reports whether the race detector is enabled.
const raceEnabled = true
