#!/bin/bash
# prepare the dfsioe workload: mr workload prepare dfsioe (options pass through:
# --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/../bin/functions.sh"
workload prepare dfsioe "$@"
