# Sourced by workloads/<name>/prepare.sh and run.sh: finds the mr binary
# and runs "mr workload <step> <name>" from the repository root, so that the
# default paths of workloads/conf/workloads.conf hold. The work is in Go
# (gomr/workloads); these scripts only give HiBench's layout.
set -eu
WORKLOADS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(dirname "$WORKLOADS_DIR")
cd "$ROOT"
CONF_DIR=${WORKLOADS_CONF:-$WORKLOADS_DIR/conf}
if [ -z "${MR:-}" ]; then
  MR=$(awk '$1 == "gomr.mr.binary" { print $2 }' "$CONF_DIR/workloads.conf")
  MR=${MR:-bin/mr}
fi
if [ ! -x "$MR" ]; then
  echo "$0: mr binary $MR not found: run make build, or set MR or gomr.mr.binary in $CONF_DIR/workloads.conf" >&2
  exit 1
fi

# workload STEP NAME [options]: run mr workload STEP NAME with the conf dir.
workload() {
  step=$1 name=$2
  shift 2
  exec "$MR" workload "$step" "$name" --conf "$CONF_DIR" "$@"
}
