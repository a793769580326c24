package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"gomr/sim"
)

func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "sim --policy P [--compare P1,P2,...] --workload W [--seed S] [--speculation none|fresh|clone | --compare-speculation] [--json] [--svg FILE] [--plots DIR]",
		Short:              "Run scheduling policies on a simulated cluster (the same policy code the JobTracker runs)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sim.Command(context.Background(), args, os.Stdout, os.Stderr)
		},
	}
}
