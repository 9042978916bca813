/**
 * The API server's client for node agents (--nodeagent-* options): picks a node's address by
 * --nodeagent-preferred-address-types, its port from status.daemonEndpoints, and opens one
 * GET to the agent, authenticated with the API server's own client certificate (the
 * --nodeagent-client-certificate identity, which is not system:masters).
 *
 * Only proxyable node addresses are reached (proxyable.ts): a node whose address is loopback,
 * link-local or unspecified, or a name resolving to one, is 400 "address not allowed".
 * A node agent that cannot be reached is 503 ServiceUnavailable, as Kubernetes answers.
 *
 * Security (CVE-2020-8559 class): redirects are never followed (node's http client does not,
 * and a 3xx answer is turned into an error by callers), and nothing of the caller's request
 * (Authorization, cookies, impersonation headers) is forwarded: only the path and query.
 *
 * The timeout bounds connecting and waiting for the response headers; a streamed body
 * (followed logs) is not limited by it and ends when `signal` aborts.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Readable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { ApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { readOptionFile, StartupError } from '../serving-options.js';
import { requestUpgrade, UpgradeError, type UpgradeOutcome } from '../../../util/upgrade-proxy.js';
import { checkProxyableHost, guardedLookup, unreachable } from './proxyable.js';

export interface NodeAgentClientOptions {
  /** HTTPS (true, the default) or plain HTTP to the agent's port. */
  https: boolean;
  clientCertFile?: string;
  clientKeyFile?: string;
  /** CA for the agent's serving certificate; unset: the certificate is not verified (as Kubernetes does). */
  caFile?: string;
  preferredAddressTypes: string[];
  /** Milliseconds for connecting and receiving response headers. */
  timeoutMs: number;
  /** Loopback node addresses are reached too (--nodeagent-allow-loopback); default refused. */
  allowLoopback?: boolean;
  log?: Logger;
}

export interface NodeTarget { host: string; port: number }

/** Kubernetes' default when a node publishes no kubelet endpoint port. */
const DEFAULT_AGENT_PORT = 10250;

interface NodeShape {
  status?: { addresses?: Array<{ type?: string; address?: string }>; daemonEndpoints?: { kubeletEndpoint?: { Port?: number } } };
}

/** Chooses the address of the first preferred type the node publishes. */
export function nodeTarget(node: KubeObject, preferred: string[]): NodeTarget {
  const status = (node as NodeShape).status ?? {};
  const addresses = status.addresses ?? [];
  let host: string | undefined;
  for (const type of preferred) {
    host = addresses.find((a) => a.type === type && a.address)?.address;
    if (host) break;
  }
  if (!host) {
    const known = addresses.map((a) => `{${a.type ?? ''} ${a.address ?? ''}}`).join(' ');
    throw new ApiError(500, 'InternalError', `no preferred addresses found; known addresses: [${known}]`);
  }
  const port = Number(status.daemonEndpoints?.kubeletEndpoint?.Port) || DEFAULT_AGENT_PORT;
  return { host, port };
}

export interface NodeRequestOptions {
  readonly headers?: Record<string, string>;
  readonly skipVerify?: boolean;
  /** GET unless given (nodes/proxy passes the caller's method on). */
  readonly method?: string;
  /** A request body, streamed to the agent. */
  readonly body?: Readable;
}

export interface NodeConnection {
  readonly options: NodeAgentClientOptions;
  /**
   * GET (or `opts.method`, with `opts.body`) `pathAndQuery` on the node's agent. Resolves with the response (body not yet read) or
   * rejects with an ApiError (400 for a refused address, 503 for connection failures, 504 for the timeout). Destroying
   * the request on `signal` abort ends a streamed body.
   */
  get(target: NodeTarget, pathAndQuery: string, signal: AbortSignal, opts?: NodeRequestOptions): Promise<http.IncomingMessage>;
  /**
   * Sends an HTTP/1.1 upgrade request (exec, attach, port-forward) with only the given headers.
   * Rejects with an ApiError (400 for a refused address, 503, or 504 on the timeout) when the agent cannot be reached.
   */
  upgrade(target: NodeTarget, method: string, pathAndQuery: string, headers: http.OutgoingHttpHeaders, signal: AbortSignal): Promise<UpgradeOutcome>;
  close(): void;
}

/** Reads the certificate files now, so a bad path is a start-up error naming the option. */
export function createNodeConnection(options: NodeAgentClientOptions): NodeConnection {
  const log = options.log ?? pino({ level: 'silent' });
  const cert = readOptionFile(options.clientCertFile, '--nodeagent-client-certificate');
  const key = readOptionFile(options.clientKeyFile, '--nodeagent-client-key');
  const ca = readOptionFile(options.caFile, '--nodeagent-certificate-authority');
  if ((cert === undefined) !== (key === undefined)) {
    throw new StartupError(cert ? '--nodeagent-client-key' : '--nodeagent-client-certificate', 'the node agent client certificate and key must be given together');
  }
  const allowLoopback = options.allowLoopback === true;
  // Every socket to an agent resolves names through the same check (see proxyable.ts).
  const lookup = guardedLookup(allowLoopback);
  const agent = options.https
    ? new https.Agent({ keepAlive: true, lookup, ...(cert && key ? { cert, key } : {}), ...(ca ? { ca } : {}), rejectUnauthorized: ca !== undefined })
    : new http.Agent({ keepAlive: true, lookup });
  // PodLogOptions.insecureSkipTLSVerifyBackend: the same client identity, no server verification.
  let insecure: https.Agent | undefined;
  const agentFor = (skipVerify: boolean): http.Agent => {
    if (!skipVerify || !options.https || ca === undefined) return agent;
    insecure ??= new https.Agent({ keepAlive: true, lookup, ...(cert && key ? { cert, key } : {}), rejectUnauthorized: false });
    return insecure;
  };
  const scheme = options.https ? 'https' : 'http';
  // Upgraded connections leave the pool; a separate agent without keep-alive keeps them apart.
  const upgradeAgent = options.https
    ? new https.Agent({ keepAlive: false, lookup, ...(cert && key ? { cert, key } : {}), ...(ca ? { ca } : {}), rejectUnauthorized: ca !== undefined })
    : new http.Agent({ keepAlive: false, lookup });

  return {
    options,
    async get(target, pathAndQuery, signal, opts = {}) {
      await checkProxyableHost(target.host, allowLoopback);
      return new Promise((resolve, reject) => {
        const hostPart = target.host.includes(':') ? `[${target.host}]` : target.host;
        const url = `${scheme}://${hostPart}:${target.port}${pathAndQuery}`;
        const method = opts.method ?? 'GET';
        const verb = method[0] + method.slice(1).toLowerCase();
        if (signal.aborted) { reject(new ApiError(500, 'InternalError', `${verb} "${url}": context canceled`)); return; }
        const mod = options.https ? https : http;
        // Only our own headers: the caller's Authorization and the like never reach the node.
        const req = mod.request(url, { method, agent: agentFor(opts.skipVerify === true), headers: { 'user-agent': 'corectl-apiserver', ...(opts.headers ?? {}) } });
        let settled = false;
        const timer = setTimeout(() => {
          if (settled) return;
          settled = true;
          req.destroy();
          reject(new ApiError(504, 'Timeout', `${verb} "${url}": timeout awaiting response headers after ${options.timeoutMs}ms`));
        }, options.timeoutMs);
        const onAbort = (): void => { req.destroy(); };
        signal.addEventListener('abort', onAbort, { once: true });
        req.on('close', () => signal.removeEventListener('abort', onAbort));
        req.on('response', (res) => {
          if (settled) { res.destroy(); return; }
          settled = true;
          clearTimeout(timer);
          resolve(res);
        });
        req.on('error', (e) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          log.debug({ err: e.message, url }, 'node agent request failed');
          reject(unreachable(e.message));
        });
        if (opts.body) opts.body.pipe(req); else req.end();
      });
    },
    async upgrade(target, method, pathAndQuery, headers, signal) {
      await checkProxyableHost(target.host, allowLoopback);
      const hostPart = target.host.includes(':') ? `[${target.host}]` : target.host;
      const url = `${scheme}://${hostPart}:${target.port}${pathAndQuery}`;
      try {
        return await requestUpgrade({ url, method, agent: upgradeAgent, timeoutMs: options.timeoutMs, signal, headers: { 'user-agent': 'corectl-apiserver', ...headers } });
      } catch (e) {
        log.debug({ err: (e as Error).message, url }, 'node agent upgrade failed');
        throw e instanceof UpgradeError && e.timeout ? new ApiError(504, 'Timeout', e.message) : unreachable((e as Error).message);
      }
    },
    close() { agent.destroy(); insecure?.destroy(); upgradeAgent.destroy(); },
  };
}


/** The message of an agent error answer: a Status' message, else the text itself. */
export function agentErrorMessage(body: string): string {
  try {
    const s = JSON.parse(body) as { kind?: string; message?: string };
    if (s && s.kind === 'Status' && typeof s.message === 'string') return s.message;
  } catch { /* plain text */ }
  return body.trim();
}
