// Package workloads is a HiBench-style workload suite over the runtime's
// apps: each workload prepares its input (prepare) and runs and checks its
// jobs (run) at one of HiBench's scale profiles (tiny, small, large, huge,
// gigantic), appending one line per measured run to a HiBench report
// (hibench.report) and writing a folder per run with the job ids, the
// configuration used, the job counters and histories, the log and a chart
// of the TaskTracker processes' CPU, memory, disk and network over the run
// (monitor.html). The configuration is HiBench's "key value" conf files in
// workloads/conf (Load); the command is "mr workload" (cmd/mr/workload.go)
// and docs/workloads.md describes the suite.
package workloads
