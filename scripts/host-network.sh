#!/usr/bin/env bash
# What the service proxy's rules need from the host, for make up (run as root):
#   net.ipv4.ip_forward=1                  pods' traffic to a ClusterIP is DNATed and forwarded;
#   br_netfilter (modprobe where present)  so that traffic between two pods on the same bridge
#   net.bridge.bridge-nf-call-iptables=1   goes through the nat rules too (a pod reaching a
#   net.bridge.bridge-nf-call-ip6tables=1  ClusterIP whose endpoint is on its own bridge).
# Prints one line per change and nothing when all is already so. --dry-run (or --check) only
# prints what it would change and exits 1 when something would change. Every setting here is
# per network namespace (br_netfilter's since Linux 5.3), so `ip netns exec NS` applies it to
# that namespace alone (the tests do). make down leaves the settings as they are, as Kubernetes'
# node set-up does. CORECTL_PROC_SYS (default /proc/sys) and CORECTL_MODPROBE (default modprobe)
# are for tests.
set -euo pipefail

say() { printf 'up: %s\n' "$*"; }

DRY=
case "${1:-}" in
  --dry-run|--check) DRY=1 ;;
  '') ;;
  *) echo "host-network.sh: unknown option $1 (--dry-run)" >&2; exit 2 ;;
esac
SYS=${CORECTL_PROC_SYS:-/proc/sys}
MODPROBE=${CORECTL_MODPROBE:-modprobe}
would=

# set_sysctl NAME VALUE WHY: sets NAME (dotted) to VALUE when it is not, saying so.
set_sysctl() {
  local name=$1 value=$2 why=$3 file
  file="$SYS/$(tr . / <<<"$name")"
  [ -e "$file" ] || return 1
  local now
  now=$(cat "$file" 2>/dev/null || echo '?')
  [ "$now" = "$value" ] && return 0
  if [ -n "$DRY" ]; then
    say "would set $name=$value (now $now): $why"
    would=1
  elif { printf '%s\n' "$value" >"$file"; } 2>/dev/null; then
    say "set $name=$value (was $now): $why"
  else
    say "could not set $name=$value (now $now): $why"
  fi
  return 0
}

set_sysctl net.ipv4.ip_forward 1 'the service proxy forwards pods'"'"' traffic to endpoints' ||
  say "no $SYS/net/ipv4/ip_forward: cannot enable IPv4 forwarding"

if [ ! -e "$SYS/net/bridge/bridge-nf-call-iptables" ]; then
  if [ -n "$DRY" ]; then
    say "would load the br_netfilter module ($MODPROBE br_netfilter)"
    would=1
  elif command -v "$MODPROBE" >/dev/null 2>&1 && "$MODPROBE" br_netfilter >/dev/null 2>&1 &&
       [ -e "$SYS/net/bridge/bridge-nf-call-iptables" ]; then
    say "loaded the br_netfilter module (bridged pod-to-pod traffic goes through the service rules)"
  else
    say "br_netfilter is not available (no module here): a pod reaching a Service whose endpoint is on its own bridge may not be answered"
  fi
fi
if [ -e "$SYS/net/bridge/bridge-nf-call-iptables" ]; then
  set_sysctl net.bridge.bridge-nf-call-iptables 1 'bridged IPv4 traffic goes through the service rules'
  set_sysctl net.bridge.bridge-nf-call-ip6tables 1 'bridged IPv6 traffic goes through the service rules' || true
elif [ -n "$DRY" ]; then
  say "would set net.bridge.bridge-nf-call-iptables=1 and net.bridge.bridge-nf-call-ip6tables=1 once br_netfilter is loaded"
fi

[ -n "$DRY" ] && [ -n "$would" ] && exit 1
exit 0
