// Command mr is the runtime's single binary: the JobTracker and TaskTracker
// daemons, job submission and control, the embedded local cluster, the
// configuration printer, the simulator, and (hidden) the task child that
// TaskTrackers start for every attempt.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	_ "gomr/apps"     // the built-in apps
	_ "gomr/conf/all" // every configuration key (policies, speculator)
	"gomr/mr"
	"gomr/tasktracker"
	"gomr/tasktracker/child"
)

// exitError carries an exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	// The task child is started by a TaskTracker; it takes no cobra flags.
	if len(os.Args) >= 2 && os.Args[1] == tasktracker.ChildArg {
		os.Exit(runChild(os.Args[2:]))
	}
	root := newRoot()
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "mr:", err)
		var ue *mr.UsageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func runChild(args []string) int {
	var attempt, umb string
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--attempt":
			attempt = args[i+1]
		case "--umbilical":
			umb = args[i+1]
		}
	}
	if attempt == "" || umb == "" {
		fmt.Fprintln(os.Stderr, "mr child: needs --attempt ID --umbilical HOST:PORT (this mode is started by a TaskTracker)")
		return 2
	}
	return child.Main(attempt, umb)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "mr",
		Short:         "A Hadoop-style MapReduce runtime",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newLocalCmd(),
		newJobTrackerCmd(),
		newTaskTrackerCmd(),
		newSubmitCmd(),
		newJobCmd(),
		newConfCmd(),
		newAppsCmd(),
		newSimCmd(),
		newCertsCmd(),
		newWorkloadCmd(),
	)
	return root
}
