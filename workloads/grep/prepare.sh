#!/bin/bash
# prepare the grep workload: mr workload prepare grep (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare grep "$@"
