//go:build race

package e2e

// raceEnabled reports whether the test binary runs under the race detector.
const raceEnabled = true
