/**
 * --tls-sni-cert-key: pick a serving certificate by the TLS server name. Names come from the
 * option's explicit patterns or, when none are given, from the certificate (CN and DNS SANs;
 * IPs never, SNI cannot carry them). Explicit patterns overwrite extracted names; among equals the
 * earlier option wins. Lookup: the exact name first, then the wildcard for its first label
 * (a.b.c → *.b.c), else the default certificate.
 */
import type { SecureContext } from 'node:tls';
import { certificateDnsNames } from './pki.js';

export interface SniEntry<T> {
  /** Explicit patterns; empty means "use the names in the certificate". */
  names: string[];
  certPem: string;
  value: T;
}

export function buildSniMap<T>(entries: SniEntry<T>[]): Map<string, T> {
  const byName = new Map<string, T>();
  // Reverse order so earlier entries overwrite later ones.
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (!e || e.names.length) continue;
    const { commonName, dnsNames } = certificateDnsNames(e.certPem);
    if (commonName && /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/i.test(commonName)) {
      byName.set(commonName.toLowerCase(), e.value);
    }
    for (const n of dnsNames) byName.set(n.toLowerCase(), e.value);
  }
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (!e) continue;
    for (const n of e.names) byName.set(n.toLowerCase(), e.value);
  }
  return byName;
}

export function selectByServerName<T>(map: Map<string, T>, serverName: string): T | undefined {
  const name = serverName.toLowerCase().replace(/\.$/, '');
  const exact = map.get(name);
  if (exact !== undefined) return exact;
  const labels = name.split('.');
  if (labels.length < 2) return undefined;
  labels[0] = '*';
  return map.get(labels.join('.'));
}

/** A Node SNICallback over a prebuilt map; unknown names get the default context. */
export function sniCallback(map: Map<string, SecureContext>, fallback: SecureContext) {
  return (serverName: string, cb: (err: Error | null, ctx?: SecureContext) => void): void => {
    cb(null, selectByServerName(map, serverName) ?? fallback);
  };
}
