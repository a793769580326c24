#!/bin/bash
# run the terasort workload: mr workload run terasort (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run terasort "$@"
