package main

import "github.com/spf13/cobra"

// newWorkloadCmd is the parent of the workload commands. On this branch
// it holds replay and compare (workload_replay.go); cmd/mr/workload.go of
// another branch defines the same parent, to be reconciled at the merge.
func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Run workloads on a real cluster: replay a trace, compare policies with the simulator",
	}
	cmd.AddCommand(newWorkloadReplayCmd(), newWorkloadCompareCmd())
	return cmd
}
