//go:build unix && !linux

package shuffle

// openNoAtime is Linux's O_NOATIME (noatime_linux.go); elsewhere there
// is none.
const openNoAtime = 0
