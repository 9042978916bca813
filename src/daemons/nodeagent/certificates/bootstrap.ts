/**
 * Node TLS bootstrap (--bootstrap-coreconfig), as Kubernetes' kubelet does it:
 *  1. --coreconfig exists and its client certificate (if any) has not expired: nothing to do;
 *  2. --cert-dir holds an unexpired nodeagent-client-current.pem (an earlier bootstrap, or a
 *     rotation): write --coreconfig pointing at it;
 *  3. otherwise authenticate with the bootstrap coreconfig (a bootstrap token), send a
 *     kube-apiserver-client-kubelet CSR for system:node:<name>, wait for approval and signing,
 *     store the pair in --cert-dir and write --coreconfig pointing at the current symlink.
 * The written coreconfig takes the server and CA of the bootstrap coreconfig.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { certificateCoreconfigText } from '../../../client/bootstrap-coreconfig.js';
import { loadCoreconfig, type ClientConnection } from '../../../client/coreconfig.js';
import { RestClient } from '../../../client/rest-client.js';
import { writePemFile } from '../../../util/pki.js';
import { CLIENT_PREFIX, currentPath, loadCurrent, storePair } from './cert-store.js';
import { CLIENT_SIGNER, requestCertificate } from './csr.js';

export interface BootstrapOptions {
  readonly coreconfig: string;
  readonly bootstrapCoreconfig: string;
  readonly certDir: string;
  readonly nodeName: string;
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly now?: () => number;
}

/** Whether the coreconfig at `path` can be used as it is: no client certificate, or an unexpired one. */
async function stillValid(path: string, now: number, log: Logger): Promise<boolean> {
  if (!existsSync(path)) return false;
  let conn: ClientConnection;
  try {
    conn = await loadCoreconfig({ path });
  } catch (e) {
    log.info({ coreconfig: path, err: (e as Error).message }, 'the existing coreconfig cannot be used; bootstrapping');
    return false;
  }
  if (!conn.cert) return true;
  try {
    const notAfter = Date.parse(new X509Certificate(conn.cert).validTo);
    if (notAfter > now) return true;
    log.info({ coreconfig: path, notAfter: new Date(notAfter).toISOString() }, 'the client certificate of the coreconfig has expired; bootstrapping');
  } catch {
    log.info({ coreconfig: path }, 'the client certificate of the coreconfig does not parse; bootstrapping');
  }
  return false;
}

async function writeCoreconfig(o: BootstrapOptions, bootstrap: ClientConnection): Promise<void> {
  // Several API servers in the bootstrap coreconfig: the node's own lists them all (failover).
  const text = certificateCoreconfigText({ server: bootstrap.servers?.join(',') ?? bootstrap.server, caPem: bootstrap.ca?.toString('utf8') ?? '', pairFile: currentPath(o.certDir, CLIENT_PREFIX) });
  await writePemFile(o.coreconfig, text, 0o600);
}

/** Runs `f` until it succeeds or the signal aborts, waiting 2 s doubling to 1 min between tries. */
export async function withRetries<T>(f: () => Promise<T>, signal: AbortSignal, log: Logger): Promise<T> {
  for (let delay = 2000; ; delay = Math.min(delay * 2, 60_000)) {
    try {
      return await f();
    } catch (e) {
      if (signal.aborted) throw e;
      log.warn({ err: (e as Error).message, retryInMs: delay }, 'certificate request failed; retrying');
    }
    await sleep(delay, signal);
  }
}

/** Resolves after `ms`, or rejects when the signal aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) { reject(signal.reason as Error); return; }
    const onAbort = (): void => { clearTimeout(t); reject(signal.reason as Error); };
    const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Makes sure --coreconfig exists with usable credentials; returns whether it (re)wrote it. */
export async function bootstrapClientCertificate(o: BootstrapOptions): Promise<boolean> {
  const now = (o.now ?? Date.now)();
  if (await stillValid(o.coreconfig, now, o.log)) return false;
  const bootstrap = await loadCoreconfig({ path: o.bootstrapCoreconfig });
  const stored = await loadCurrent(o.certDir, CLIENT_PREFIX);
  if (stored && stored.notAfter > now) {
    o.log.info({ coreconfig: o.coreconfig }, 'client certificate found in --cert-dir; writing the coreconfig');
    await writeCoreconfig(o, bootstrap);
    return true;
  }
  const client = new RestClient({ connection: bootstrap, userAgent: `nodeagent/${o.nodeName} (bootstrap)`, log: o.log });
  try {
    o.log.info({ node: o.nodeName }, 'requesting a client certificate with the bootstrap credentials');
    const issued = await withRetries(() => requestCertificate(client, { signerName: CLIENT_SIGNER, nodeName: o.nodeName }, o.signal), o.signal, o.log);
    await storePair(o.certDir, CLIENT_PREFIX, issued.certPem, issued.keyPem);
    o.log.info({ csr: issued.csrName }, 'client certificate issued; writing the coreconfig');
  } finally {
    client.close();
  }
  await writeCoreconfig(o, bootstrap);
  return true;
}
