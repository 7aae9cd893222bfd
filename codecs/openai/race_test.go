//go:build race

package openai

// raceEnabled reports whether the race detector is enabled.
const raceEnabled = true
