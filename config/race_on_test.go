//go:build race

package config

// raceEnabled: the race detector's shadow memory makes a peak RSS
// meaningless as a bound.
const raceEnabled = true
