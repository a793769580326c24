#!/bin/bash
# prepare the pagerank workload: mr workload prepare pagerank (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare pagerank "$@"
