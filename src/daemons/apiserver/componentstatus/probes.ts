/**
 * The probes behind componentstatuses, answering with the Healthy condition the way
 * Kubernetes' componentstatus registry does:
 *
 *  - an HTTP(S) component (scheduler, controller-manager): GET its /healthz without verifying
 *    TLS; 200-399 is True with the body as message; any other code is False with message
 *    "HTTP probe failed with statuscode: <code>"; a failed request (refused, timed out, TLS)
 *    is False with Go's request error as message (Kubernetes' HTTP prober reports those as
 *    failures, not errors, so `error` stays empty);
 *  - a storage backend: its health check; True "ok", or False with the failure in `error`.
 */
import * as http from 'node:http';
import * as https from 'node:https';

export interface ComponentCondition {
  type: 'Healthy';
  status: 'True' | 'False' | 'Unknown';
  message?: string;
  error?: string;
}

/** One component of the list: its name and how to probe it. */
export interface Component {
  readonly name: string;
  probe(timeoutMs: number): Promise<ComponentCondition>;
}

/** Kubernetes' probe timeout for component statuses. */
export const DEFAULT_PROBE_TIMEOUT_MS = 20_000;

/** Kubernetes' HTTP prober keeps at most this much of a body. */
const MAX_BODY_BYTES = 10 * 1024;

/** A Node socket error in the words of Go's net/http client (`Get "<url>": dial tcp ...`). */
function goRequestError(url: URL, e: NodeJS.ErrnoException): string {
  const hostPort = `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
  const dial = (what: string): string => `Get "${url.href}": dial tcp ${hostPort}: ${what}`;
  switch (e.code) {
    case 'ECONNREFUSED': return dial('connect: connection refused');
    case 'EHOSTUNREACH': return dial('connect: no route to host');
    case 'ENETUNREACH': return dial('connect: network is unreachable');
    case 'ECONNRESET': return `Get "${url.href}": read: connection reset by peer`;
    case 'ENOTFOUND': return dial(`lookup ${url.hostname}: no such host`);
    default: return `Get "${url.href}": ${e.message}`;
  }
}

/** GET `url` once; TLS is not verified (the components serve self-signed certificates). */
function httpGet(url: URL, timeoutMs: number): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? https.get : http.get;
    const req = get(url, { rejectUnauthorized: false, headers: { 'User-Agent': 'kube-probe/corectl' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size >= MAX_BODY_BYTES) return;
        chunks.push(c.subarray(0, MAX_BODY_BYTES - size));
        size += Math.min(c.length, MAX_BODY_BYTES - size);
      });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    // One deadline for the whole exchange, as Go's Client.Timeout.
    const timer = setTimeout(() => {
      req.destroy(Object.assign(new Error(`Get "${url.href}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`), { code: 'CORECTL_TIMEOUT' }));
    }, timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
  });
}

/** A component answering on an HTTP(S) health URL. */
export function httpComponent(name: string, url: string): Component {
  const target = new URL(url);
  return {
    name,
    async probe(timeoutMs) {
      let reply: { code: number; body: string };
      try {
        reply = await httpGet(target, timeoutMs);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        const message = err.code === 'CORECTL_TIMEOUT' ? err.message : goRequestError(target, err);
        return { type: 'Healthy', status: 'False', message };
      }
      if (reply.code >= 200 && reply.code < 400) return { type: 'Healthy', status: 'True', message: reply.body };
      return { type: 'Healthy', status: 'False', message: `HTTP probe failed with statuscode: ${reply.code}` };
    },
  };
}

/** A storage backend checked by `check` (resolves when healthy, rejects with the reason). */
export function storageComponent(name: string, check: () => Promise<unknown>): Component {
  return {
    name,
    async probe(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          check(),
          new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('context deadline exceeded')), timeoutMs); }),
        ]);
        return { type: 'Healthy', status: 'True', message: 'ok' };
      } catch (e) {
        return { type: 'Healthy', status: 'False', error: e instanceof Error ? e.message : String(e) };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
