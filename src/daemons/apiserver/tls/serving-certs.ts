/**
 * The serving certificate: the files given by --tls-cert-file/--tls-private-key-file, or a
 * self-signed pair generated once into --cert-dir (apiserver.crt, apiserver.key) and reused on
 * every later start, as Kubernetes does.
 */
import { access, readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import { formatIp, parseCidr } from '../../../util/ip.js';
import { createSelfSignedServing, splitPemCertificates, writePemFile } from '../../../util/pki.js';
import { StartupError, type ServingOptions } from '../serving-options.js';

export interface ServingPair {
  certPem: string;
  keyPem: string;
  /** Where the pair came from (for the ready line and logs). */
  certFile: string;
  keyFile: string;
  generated: boolean;
}

export const KUBERNETES_SERVICE_NAMES = [
  'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local',
];

/** --advertise-address, else --bind-address unless unspecified, else the first non-loopback IPv4. */
export function resolveAdvertiseAddress(opts: Pick<ServingOptions, 'advertiseAddress' | 'bindAddress'>): string {
  if (opts.advertiseAddress && opts.advertiseAddress !== '0.0.0.0' && opts.advertiseAddress !== '::') return opts.advertiseAddress;
  if (opts.bindAddress && opts.bindAddress !== '0.0.0.0' && opts.bindAddress !== '::') return opts.bindAddress;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && !a.internal) return a.address;
    }
  }
  return '127.0.0.1';
}

/** The first usable address of the service range (10.0.0.0/24 → 10.0.0.1): the kubernetes service IP. */
export function firstServiceIp(range: string | undefined): string | undefined {
  const c = range ? parseCidr(range.split(',')[0]?.trim() ?? '') : undefined;
  if (!c) return undefined;
  const ip = [...c.ip];
  for (let i = ip.length - 1; i >= 0; i--) {
    ip[i] = ((ip[i] ?? 0) + 1) & 0xff;
    if (ip[i] !== 0) break;
  }
  return formatIp(ip);
}

async function readable(path: string): Promise<boolean> {
  try { await access(path); return true; } catch { return false; }
}

async function readOption(option: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    throw new StartupError(option, `cannot read "${path}": ${(e as Error).message}`, { cause: e });
  }
}

export async function loadServingPair(opts: ServingOptions, log: Logger): Promise<ServingPair> {
  const { tlsCertFile, tlsPrivateKeyFile } = opts;
  if (tlsCertFile || tlsPrivateKeyFile) {
    if (!tlsCertFile) throw new StartupError('--tls-cert-file', 'required when --tls-private-key-file is set');
    if (!tlsPrivateKeyFile) throw new StartupError('--tls-private-key-file', 'required when --tls-cert-file is set');
    const certPem = await readOption('--tls-cert-file', tlsCertFile);
    const keyPem = await readOption('--tls-private-key-file', tlsPrivateKeyFile);
    if (splitPemCertificates(certPem).length === 0) throw new StartupError('--tls-cert-file', `no PEM certificate in "${tlsCertFile}"`);
    return { certPem, keyPem, certFile: tlsCertFile, keyFile: tlsPrivateKeyFile, generated: false };
  }
  const certFile = join(opts.certDir, 'apiserver.crt');
  const keyFile = join(opts.certDir, 'apiserver.key');
  if (await readable(certFile) && await readable(keyFile)) {
    const certPem = await readOption('--cert-dir', certFile);
    const keyPem = await readOption('--cert-dir', keyFile);
    if (splitPemCertificates(certPem).length > 0) {
      log.info({ certFile }, 'reusing generated serving certificate');
      return { certPem, keyPem, certFile, keyFile, generated: false };
    }
  }
  const host = resolveAdvertiseAddress(opts);
  const ips = ['127.0.0.1'];
  const dnsNames = ['localhost', ...KUBERNETES_SERVICE_NAMES];
  if (isIP(host)) { if (!ips.includes(host)) ips.unshift(host); } else dnsNames.unshift(host);
  const svc = firstServiceIp(opts.serviceClusterIpRange ?? '10.0.0.0/24');
  if (svc && !ips.includes(svc)) ips.push(svc);
  const pair = await createSelfSignedServing({ host, dnsNames, ips });
  try {
    await writePemFile(certFile, pair.certPem, 0o644);
    await writePemFile(keyFile, pair.keyPem, 0o600);
  } catch (e) {
    throw new StartupError('--cert-dir', `cannot write the generated serving certificate: ${(e as Error).message}`, { cause: e });
  }
  log.info({ certFile, ips, dnsNames }, 'generated self-signed serving certificate');
  return { certPem: pair.certPem, keyPem: pair.keyPem, certFile, keyFile, generated: true };
}
