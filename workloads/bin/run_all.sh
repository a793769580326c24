#!/bin/bash
# Prepare and run every workload of conf/benchmarks.lst: mr workload suite
# (options pass through: --profile, --jobtracker, --report, -D key=value).
. "$(dirname "${BASH_SOURCE[0]}")/functions.sh"
exec "$MR" workload suite --conf "$CONF_DIR" "$@"
