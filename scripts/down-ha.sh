#!/usr/bin/env bash
# make down-ha: stops what make up-ha started (its pid file in HA_DIR, default $TMPDIR/corectl-ha).
set -euo pipefail
HA_DIR=${HA_DIR:-${TMPDIR:-/tmp}/corectl-ha}
if [ -f "$HA_DIR/up-ha.pid" ] && pid=$(cat "$HA_DIR/up-ha.pid") && kill -0 "$pid" 2>/dev/null; then
  echo "down-ha: stopping make up-ha (pid $pid)"
  kill -TERM "$pid"
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
  echo "down-ha: still running after 30 s" >&2
  exit 1
fi
echo "down-ha: nothing running in $HA_DIR"
