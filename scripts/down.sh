#!/usr/bin/env bash
# make down: stops the corectl server of DATA_DIR (its pid file) and the containerd make up
# started there, and says what it stopped. Pods keep running under their containerd shims (as
# on a Kubernetes node whose kubelet and containerd restart): the next make up adopts them with
# their pod IPs and restart counts. REMOVE_PODS=1 removes every pod first (and the service
# proxy's nftables table). Nothing else is deleted: make up resumes the same cluster. DATA_DIR
# defaults as in up.sh (/var/lib/core as root, else $HOME/.local/share/corectl).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'down: %s\n' "$*"; }

if [ "$(id -u)" = 0 ]; then DATA_DIR=${DATA_DIR:-/var/lib/core}; else DATA_DIR=${DATA_DIR:-$HOME/.local/share/corectl}; fi
if [ ! -d "$DATA_DIR" ]; then
  say "no cluster in $DATA_DIR"
  exit 0
fi

stopped=
if [ -f "$DATA_DIR/server.pid" ]; then
  pid=$(cat "$DATA_DIR/server.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' server'; then
    say "stopping corectl server (pid $pid)"
    # Tells the make up in the foreground that containerd goes too (it says so instead of
    # "containerd keeps running").
    : >"$DATA_DIR/down-requested"
    kill -TERM "$pid"
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      say "still running after 30s: killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    stopped=1
  fi
  rm -f "$DATA_DIR/server.pid"
fi
[ -n "$stopped" ] || say "corectl server is not running"

if [ -d "$DATA_DIR/containerd" ]; then
  if [ -f "${CORECTL_DIST:-dist}/test/helpers/containerd.js" ]; then
    if [ -n "${REMOVE_PODS:-}" ]; then
      node scripts/containerd-setup.mjs down "$DATA_DIR/containerd" 2>&1 | sed 's/^/down: /'
    else
      node scripts/containerd-setup.mjs stop "$DATA_DIR/containerd" 2>&1 | sed 's/^/down: /'
    fi
  elif [ -f "$DATA_DIR/containerd/containerd.pid" ]; then
    pid=$(cat "$DATA_DIR/containerd/containerd.pid")
    kill -TERM "$pid" 2>/dev/null && say "containerd (pid $pid) stopped" || true
    rm -f "$DATA_DIR/containerd/containerd.pid"
  fi
fi
# The service proxy's nftables table (ip corectl-proxy): when its pods are gone, so are its
# routes; pods that keep running keep their service routes until make up.
if [ -n "${REMOVE_PODS:-}" ] && [ "$(id -u)" = 0 ] && command -v nft >/dev/null 2>&1 && nft list table ip corectl-proxy >/dev/null 2>&1; then
  bin/corectl proxy --cleanup --v=0 >/dev/null 2>&1 && say "removed the service proxy's nftables table ip corectl-proxy" || say "could not remove nftables table ip corectl-proxy (nft delete table ip corectl-proxy)"
fi
say "done; make up resumes the cluster in $DATA_DIR"
