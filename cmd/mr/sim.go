package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"gomr/sim"
)

// newSimCmd is mr sim. The simulator parses its own flags, so -h and
// --help are its own too: it prints its usage and flags on stdout.
func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:                strings.TrimPrefix(sim.Usage, "mr "),
		Short:              sim.Short,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sim.Command(context.Background(), args, os.Stdout, os.Stderr)
		},
	}
}
