#!/bin/bash
# run the sleep workload: mr workload run sleep (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run sleep "$@"
