#!/bin/bash
# run the sort workload: mr workload run sort (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run sort "$@"
