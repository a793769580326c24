package main

import (
	"bytes"
	"strings"
	"testing"
)

// runMRSplit runs mr with args and returns its stdout and stderr apart.
func runMRSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := mrCmd(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestSimHelp: mr sim --help (and -h) prints the usage and the
// simulator's real flags on stdout, nothing on stderr, and succeeds.
func TestSimHelp(t *testing.T) {
	for _, flag := range []string{"--help", "-h"} {
		out, errOut, err := runMRSplit(t, "sim", flag)
		if err != nil {
			t.Fatalf("mr sim %s: %v\nstderr: %s", flag, err, errOut)
		}
		if errOut != "" {
			t.Errorf("mr sim %s wrote to stderr:\n%s", flag, errOut)
		}
		for _, want := range []string{"Usage:\n  mr sim --policy", "Flags:", "--workload string", "--compare-speculation"} {
			if !strings.Contains(out, want) {
				t.Errorf("mr sim %s stdout lacks %q:\n%s", flag, want, out)
			}
		}
	}
}
