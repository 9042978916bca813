#!/usr/bin/env bash
# make down-ha: stops what make up-ha started (its pid file in HA_DIR, default $TMPDIR/corectl-ha);
# up-ha then stops its processes and removes the network it made. Whatever is still listed in
# HA_DIR/network afterwards (up-ha killed, or crashed) is removed here: processes left in those
# namespaces, the veths, the namespaces, the bridge. Nothing that file does not list is touched.
set -euo pipefail
HA_DIR=$(realpath -m "${HA_DIR:-${TMPDIR:-/tmp}/corectl-ha}")
NET=$HA_DIR/network
did=
# Alive and not a zombie (an exited up-ha its parent has not reaped yet is done).
running() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != Z ]; }
rm -f "$HA_DIR/stopped.log"
if [ -f "$HA_DIR/up-ha.pid" ] && pid=$(cat "$HA_DIR/up-ha.pid") && running "$pid"; then
  echo "down-ha: stopping make up-ha (pid $pid)"
  kill -TERM "$pid"
  for _ in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
  if running "$pid"; then echo "down-ha: still running after 30 s" >&2; exit 1; fi
  if [ -f "$HA_DIR/stopped.log" ]; then sed 's/^/down-ha: /' "$HA_DIR/stopped.log"; fi
  did=1
fi
if [ -f "$NET" ]; then
  did=1
  while read -r kind name; do
    # A host process of up-ha's, while its command line still names HA_DIR (not a reused pid).
    if [ "$kind" = process ] && [ -r "/proc/$name/cmdline" ] && tr '\0' ' ' < "/proc/$name/cmdline" | grep -qF "$HA_DIR"; then
      cmd=$(tr '\0' ' ' < "/proc/$name/cmdline" | cut -d' ' -f1)
      if kill -KILL "$name" 2>/dev/null; then echo "down-ha: killed process $name ($cmd)"; fi
      continue
    fi
    if [ "$kind" != netns ] || [ ! -e "/var/run/netns/$name" ]; then continue; fi
    for p in $(ip netns pids "$name" 2>/dev/null); do
      if kill -KILL "$p" 2>/dev/null; then echo "down-ha: killed process $p left in $name"; fi
    done
  done < "$NET"
  for want in veth netns bridge; do
    while read -r kind name; do
      if [ "$kind" != "$want" ]; then continue; fi
      if [ "$kind" = netns ]; then
        if [ -e "/var/run/netns/$name" ] && ip netns del "$name"; then echo "down-ha: removed network namespace $name"; fi
      elif ip link show dev "$name" >/dev/null 2>&1 && ip link del "$name"; then
        echo "down-ha: removed $kind $name"
      fi
    done < "$NET"
  done
  rm -f "$NET" "$HA_DIR/up-ha.pid"
fi
[ -n "$did" ] || echo "down-ha: nothing running in $HA_DIR"
