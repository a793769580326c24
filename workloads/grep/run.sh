#!/bin/bash
# run the grep workload: mr workload run grep (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run grep "$@"
