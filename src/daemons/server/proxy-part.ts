/**
 * The service proxy as a part of `corectl server`: when it runs and what the server sets for
 * it. It programs the host's nftables, so it runs only where that makes sense and is allowed:
 * as root, with the nft command, and with a CRI runtime (the fake runtime has no pods to route
 * to; the server tests use it, and must never touch the host's ruleset).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ProxyHostFacts {
  uid: number;
  hasNft: boolean;
  /** Whether bridged pod-to-pod traffic passes the IPv4 hooks (br_netfilter on). */
  bridgeNfCall: boolean;
}

export function proxyHostFacts(): ProxyHostFacts {
  let bridgeNfCall = false;
  try { bridgeNfCall = readFileSync('/proc/sys/net/bridge/bridge-nf-call-iptables', 'utf8').trim() === '1'; } catch { /* module not loaded */ }
  return {
    uid: process.getuid?.() ?? -1,
    hasNft: spawnSync('nft', ['--version'], { stdio: 'ignore', timeout: 5000 }).status === 0,
    bridgeNfCall,
  };
}

/** Why the proxy does not run, or undefined when it does. */
export function proxyOffReason(opts: { disabled: boolean; runtime: 'remote' | 'fake' }, host: () => ProxyHostFacts = proxyHostFacts): string | undefined {
  if (opts.disabled) return '--disable-proxy';
  if (opts.runtime === 'fake') return 'the fake runtime has no pods to route to';
  const facts = host();
  if (facts.uid !== 0) return 'it programs nftables, which needs root';
  if (!facts.hasNft) return 'the nft command is missing (Debian package nftables)';
  return undefined;
}

/**
 * What the server sets for the proxy. Its health and metrics listeners stay off (as the
 * controller manager's and scheduler's); its rules go when the server stops. Without br_netfilter, a pod's reply to another pod on
 * the bridge would bypass the host's conntrack and never be un-NATed: then every connection to
 * a service is masqueraded so that replies come back through the host.
 */
export function proxyDerivedArgs(coreconfig: string, nodeName: string, host: () => ProxyHostFacts = proxyHostFacts): string[] {
  return [
    `--coreconfig=${coreconfig}`,
    `--hostname-override=${nodeName}`,
    '--healthz-bind-address=',
    '--metrics-bind-address=',
    '--cleanup-on-exit=true',
    ...(host().bridgeNfCall ? [] : ['--masquerade-all=true']),
  ];
}
