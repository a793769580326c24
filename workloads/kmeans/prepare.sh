#!/bin/bash
# prepare the kmeans workload: mr workload prepare kmeans (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare kmeans "$@"
