#!/bin/bash
# run the pagerank workload: mr workload run pagerank (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run pagerank "$@"
