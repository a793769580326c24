#!/bin/bash
# run the kmeans workload: mr workload run kmeans (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run kmeans "$@"
