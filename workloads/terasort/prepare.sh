#!/bin/bash
# prepare the terasort workload: mr workload prepare terasort (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare terasort "$@"
