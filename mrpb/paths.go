package mrpb

// TaskLogPath is the TaskTracker HTTP path that serves an attempt's log:
// GET TaskLogPath?attemptid=ATTEMPT&filter=stdout|stderr. The JobTracker
// reads it for `mr job -logs` and its web UI (with TLS on, the tracker
// serves it to the JobTracker's certificate only).
const TaskLogPath = "/tasklog"
