#!/bin/bash
# prepare the sort workload: mr workload prepare sort (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare sort "$@"
