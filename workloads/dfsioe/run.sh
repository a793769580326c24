#!/bin/bash
# run the dfsioe workload: mr workload run dfsioe (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload run dfsioe "$@"
