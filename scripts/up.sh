#!/usr/bin/env bash
# make up: a one-node cluster on this machine, in the foreground (Ctrl-C stops it).
#   1. as root on Debian: apt-get installs what is missing (containerd, runc,
#      containernetworking-plugins, busybox-static, nftables for the service proxy, docker-registry
#      for the local registry mirror);
#   2. as root with those present: a private containerd under $DATA_DIR/containerd (started in
#      the background, pid recorded, offline busybox images imported); otherwise the node runs
#      simulated containers (the fake runtime);
#   3. bin/corectl server --data-dir=$DATA_DIR ... in the foreground; its logs go to
#      $DATA_DIR/logs/server.log (the API server's /logs/ shows that directory), its progress
#      lines to the terminal.
# A second `make up` resumes the same cluster (same data dir, same PKI, same objects).
# Settings (environment or make variables): DATA_DIR (default /var/lib/core as root, else
# $HOME/.local/share/corectl), SERVER_ARGS (more `corectl server` options), RUNTIME=fake (skip
# containerd), NO_APT=1 (never run apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'up: %s\n' "$*"; }

if [ "$(id -u)" = 0 ]; then
  DATA_DIR=${DATA_DIR:-/var/lib/core}
  ROOT=1
else
  DATA_DIR=${DATA_DIR:-$HOME/.local/share/corectl}
  ROOT=
fi
mkdir -p "$DATA_DIR"
chmod 700 "$DATA_DIR"
DATA_DIR=$(cd "$DATA_DIR" && pwd)
mkdir -p "$DATA_DIR/logs"
LOG=$DATA_DIR/logs/server.log

# CORECTL_DIST runs another build directory than dist/ (development).
DIST=${CORECTL_DIST:-dist}
if [ ! -f "$DIST/src/cli.js" ]; then
  say "$DIST/src/cli.js is missing: run make build first"
  exit 1
fi
if [ "$DIST" = dist ]; then
  LAUNCH=(bin/corectl)
else
  # The same Node flags as the launcher's first line (#!/usr/bin/env -S node ...).
  read -r -a NODE_FLAGS <<< "$(head -n 1 bin/corectl | sed -n 's/^#!.*env -S node//p')"
  LAUNCH=(node "${NODE_FLAGS[@]}" --input-type=module -e "const m = await import('file://$(cd "$DIST" && pwd)/src/cli.js'); process.exitCode = await m.main(process.argv);" corectl)
fi
export CORECTL_DIST=$DIST

# Already running?
if [ -f "$DATA_DIR/server.pid" ]; then
  pid=$(cat "$DATA_DIR/server.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' server'; then
    say "a corectl server already runs on $DATA_DIR (pid $pid); make down stops it"
    exit 1
  fi
fi

rm -f "$DATA_DIR/down-requested"

# 1. Packages.
PACKAGES=(containerd runc containernetworking-plugins busybox-static nftables docker-registry conntrack)
if [ "${RUNTIME:-}" = fake ] || [ -n "${NO_APT:-}" ]; then
  :
elif [ -z "$ROOT" ]; then
  say "not root: skipping package installation and containerd; the node will simulate containers"
elif [ ! -f /etc/debian_version ] || ! command -v apt-get >/dev/null; then
  say "not Debian: install ${PACKAGES[*]} yourself for real containers; skipping apt-get"
else
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (apt-get)"
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$DATA_DIR/apt.log" 2>&1; then
      say "apt-get failed (see $DATA_DIR/apt.log); going on with what is installed"
    fi
  fi
fi

# The service proxy's needs (IPv4 forwarding, br_netfilter; conntrack is in PACKAGES), as root
# with real containers: scripts/host-network.sh prints one line per change, none if all is set.
if [ "${RUNTIME:-}" != fake ] && [ -n "$ROOT" ]; then
  bash scripts/host-network.sh || true
fi

# 2. Container runtime.
SERVER=("${LAUNCH[@]}" server "--data-dir=$DATA_DIR")
# With containerd, busybox is imported as localhost/busybox:static (a :latest tag would make
# the node try to pull it from a registry); the fake runtime takes any image name.
IMAGE=localhost/busybox:static
if [ "${RUNTIME:-}" != fake ] && [ -n "$ROOT" ]; then
  if reason=$(node scripts/containerd-setup.mjs check); then
    say "preparing containerd in $DATA_DIR/containerd"
    if endpoint=$(node scripts/containerd-setup.mjs up "$DATA_DIR/containerd" 2>"$DATA_DIR/containerd-setup.log"); then
      sed 's/^/up: /' "$DATA_DIR/containerd-setup.log"
      SERVER+=("--container-runtime-endpoint=$endpoint" "--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox")
      # A local registry mirror of docker.io holds busybox (registry-mirror.mjs): plain names pull.
      [ -f "$DATA_DIR/containerd/mirror/registry.pid" ] && IMAGE=busybox
    else
      sed 's/^/up: /' "$DATA_DIR/containerd-setup.log"
      say "containerd could not start; the node will simulate containers"
    fi
  else
    say "no real containers: $reason; the node will simulate containers"
  fi
fi
# shellcheck disable=SC2206 # SERVER_ARGS is a list of options on purpose
SERVER+=(${SERVER_ARGS:-})

# 3. The server, in the foreground. Its stdout (progress lines) is read here to add the hints
# once the cluster answers; the reader ignores Ctrl-C so that it prints the stop lines too.
say "starting corectl ${SERVER[*]:${#LAUNCH[@]}}"
say "logs: $LOG (Ctrl-C stops the cluster; make down also stops containerd; make up resumes)"
echo "--- $(date -u +%FT%TZ) make up" >>"$LOG"
set +e
"${SERVER[@]}" 2>>"$LOG" | (
  trap '' INT
  while IFS= read -r line; do
    printf '%s\n' "$line"
    case $line in
      *"cluster admin credentials"*)
        cat <<EOF
up: the cluster answers. In another terminal, try:
up:   export KUBECONFIG=$DATA_DIR/admin.coreconfig
up:   kubectl get nodes
up:   kubectl create deployment web --image=$IMAGE -- httpd -f -p 80
up:   kubectl get pods -o wide
up:   kubectl exec deploy/web -- cat /etc/hostname
EOF
        ;;
    esac
  done
)
code=${PIPESTATUS[0]}
set -e
if [ "$code" != 0 ] && [ "$code" != 130 ]; then
  say "the server exited with code $code; the end of $LOG:"
  tail -n 20 "$LOG" | sed 's/^/  /'
fi
# make down stops containerd right after the server: say so, not that it keeps running.
if [ -f "$DATA_DIR/down-requested" ]; then
  rm -f "$DATA_DIR/down-requested"
  say "stopped by make down (containerd too)"
elif [ -f "$DATA_DIR/containerd/containerd.pid" ]; then
  cpid=$(cat "$DATA_DIR/containerd/containerd.pid" 2>/dev/null || true)
  if [ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null; then
    say "containerd keeps running (pid $cpid); make down stops it"
  fi
fi
exit "$code"
