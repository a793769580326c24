#!/bin/bash
# prepare the wordcount workload: mr workload prepare wordcount (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare wordcount "$@"
