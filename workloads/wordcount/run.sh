#!/bin/bash
# run the wordcount workload: mr workload run wordcount (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run wordcount "$@"
