/** Maps --tls-min-version and --tls-cipher-suites (Go constant names) to Node TLS options. */
import type { SecureVersion } from 'node:tls';
import { TLS_CIPHER_SUITES, TLS_VERSION_TO_NODE } from '../flags/known-names.js';
import { StartupError } from './startup-error.js';

/** Go keeps its TLS 1.3 suites whatever --tls-cipher-suites says; so do we. */
const TLS13_DEFAULT = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'];

export function minTlsVersion(goName: string | undefined): SecureVersion {
  if (!goName) return 'TLSv1.2';
  const v = TLS_VERSION_TO_NODE[goName];
  if (!v) throw new StartupError('--tls-min-version', `unknown TLS version "${goName}" (allowed: ${Object.keys(TLS_VERSION_TO_NODE).join(', ')})`);
  return v;
}

/** An OpenSSL cipher string for Node's `ciphers` option, or undefined for Node's defaults. */
export function cipherList(goNames: string[] | undefined): string | undefined {
  if (!goNames || goNames.length === 0) return undefined;
  const out: string[] = [];
  for (const name of goNames) {
    const openssl = TLS_CIPHER_SUITES[name];
    if (!openssl) throw new StartupError('--tls-cipher-suites', `unknown cipher suite "${name}"`);
    if (!out.includes(openssl)) out.push(openssl);
  }
  if (!out.some((c) => c.startsWith('TLS_'))) out.push(...TLS13_DEFAULT);
  return out.join(':');
}
