//go:build race

package retry

// raceEnabled reports whether the race detector is enabled.
const raceEnabled = true
