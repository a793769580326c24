//go:build !race

package main

// raceEnabled tells whether this test binary was built with -race.
const raceEnabled = false
