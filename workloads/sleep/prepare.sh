#!/bin/bash
# prepare the sleep workload: mr workload prepare sleep (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare sleep "$@"
