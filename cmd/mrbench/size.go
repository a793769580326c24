package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseSize parses a byte count with an optional decimal unit: k (10^3),
// m (10^6), g (10^9) or t (10^12), in either case and optionally followed
// by "b" ("1g", "256MB", "1.5g", "100000"). Units are decimal, as TeraGen's
// row counts and GraySort's data sizes are.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "b")
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'k':
			mult = 1e3
		case 'm':
			mult = 1e6
		case 'g':
			mult = 1e9
		case 't':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("size %q: want a positive number with an optional unit k, m, g or t (decimal)", s)
	}
	n := v * mult
	if n >= math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(n), nil
}

// humanBytes renders a byte count with a decimal unit.
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// humanKB renders a size given in KiB (as rusage and /proc report it) in
// MiB.
func humanKB(kb int64) string {
	if kb <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(kb)/1024)
}
