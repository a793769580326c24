// Package apps holds the built-in applications, registered from init
// functions in package mr's registry so that any binary that links this
// package can both submit them and run their tasks:
//
//   - wordcount <in>... <out>: counts whitespace-separated words.
//   - grep <in> <out> <regex> [<group>]: counts regular expression matches
//     and lists them, most frequent first (jobs grep-search and grep-sort).
//   - teragen <rows> <out>: writes GraySort input records (job teragen).
//   - terasort <in> <out>: sorts such records into a total order across
//     the part files (job terasort).
//   - teravalidate <in> <report>: checks the order of terasort's output and
//     sums its checksum (job teravalidate).
//   - terasum <in> <out>: the record count and checksum without the order
//     check (job terasum).
//   - sleep [-m maps] [-r reduces] [-mt ms] [-rt ms] [-o dir]: tasks that
//     only sleep, for scheduler and latency measurements (job sleep).
//
// The apps take the arguments of the Hadoop examples of the same names.
// Job definitions are registered under the names given in parentheses.
package apps
