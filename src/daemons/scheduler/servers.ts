/**
 * The scheduler's HTTP endpoints: /healthz, /livez, /readyz, /metrics and, with --profiling,
 * /debug/pprof/ (src/util/pprof.ts, as the API server and the controller manager: an index, a
 * V8 CPU profile at /debug/pprof/profile?seconds=N as .cpuprofile JSON, and on the secure port,
 * where the caller was authenticated and authorized, a heap snapshot at /debug/pprof/heap).
 *
 *  - `--port` (when > 0): plain HTTP on --bind-address, no authentication (as the old
 *    kube-scheduler --port was);
 *  - `--secure-port` (when > 0): HTTPS on --bind-address with a self-signed pair made at start
 *    (the scheduler has no certificate options). Health paths are open; other paths are
 *    authenticated (client certificate of the coreconfig's CA, or a bearer token by TokenReview)
 *    and authorized by a SubjectAccessReview at the API server (src/auth/delegated.ts).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Logger } from 'pino';
import { gateSecurePort, type DelegatedAccess } from '../../auth/delegated.js';
import type { Registry } from 'prom-client';
import { createSelfSignedServing } from '../../util/pki.js';
import { listen, send, closeServers } from '../../util/http-serving.js';
import { servePprofPath } from '../../util/pprof.js';

export interface ServingConfig {
  port: number;
  securePort: number;
  bindAddress: string;
  profiling: boolean;
  clientCa?: Buffer | undefined;
  /** Delegated authentication and authorization of the secure port (TokenReview, SubjectAccessReview). */
  access?: DelegatedAccess | undefined;
}

export interface Servers {
  readonly httpPort: number;
  readonly httpsPort: number;
  /** Health reported on /healthz and /livez (false once leadership is lost). */
  setHealthy(ok: boolean, reason?: string): void;
  /** Readiness on /readyz (true once the caches synced). */
  setReady(ok: boolean): void;
  close(): Promise<void>;
}



export async function startServers(cfg: ServingConfig, registry: Registry, log: Logger, signal: AbortSignal): Promise<Servers> {
  let healthy = true, reason = '', ready = false;
  const handle = (secure: boolean) => (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (req.method !== 'GET' && req.method !== 'HEAD') { send(res, 405, 'method not allowed\n'); return; }
    if (path === '/healthz' || path === '/livez') {
      if (healthy) send(res, 200, 'ok'); else send(res, 500, `[-]scheduler failed: ${reason}\n${path.slice(1)} check failed\n`);
      return;
    }
    if (path === '/readyz') {
      if (healthy && ready) send(res, 200, 'ok'); else send(res, 500, `[-]scheduler not ready${reason ? `: ${reason}` : ''}\nreadyz check failed\n`);
      return;
    }
    if (!secure) { serve(req, res, url, path, false); return; }
    gateSecurePort(cfg.access, req, path, () => serve(req, res, url, path, true), (code, text) => send(res, code, text));
  };

  /** `secure`: on the secure port, the caller authenticated and authorized for the path. */
  const serve = (req: IncomingMessage, res: ServerResponse, url: URL, path: string, secure: boolean): void => {
    if (path === '/metrics') {
      registry.metrics().then((text) => send(res, 200, text, registry.contentType), (e: Error) => send(res, 500, `${e.message}\n`));
      return;
    }
    if (cfg.profiling && (path === '/debug/pprof' || path.startsWith('/debug/pprof/'))) {
      // `path` has its trailing slashes cut: the index is /debug/pprof/ exactly, as Go's mux.
      // A heap snapshot holds memory contents (keys, tokens): only for authorized callers.
      servePprofPath(url.pathname, url.searchParams, res, signal, secure);
      return;
    }
    send(res, 404, '404 page not found\n');
  };


  const servers: Server[] = [];
  let httpPort = 0, httpsPort = 0;
  try {
    if (cfg.port > 0) {
      const srv = createHttpServer(handle(false));
      servers.push(srv);
      httpPort = await listen(srv, cfg.port, cfg.bindAddress);
      log.info({ address: cfg.bindAddress, port: httpPort }, 'serving health and metrics on HTTP');
    }
    if (cfg.securePort > 0) {
      const host = cfg.bindAddress === '0.0.0.0' || cfg.bindAddress === '::' ? '127.0.0.1' : cfg.bindAddress;
      const pair = await createSelfSignedServing({ host: 'localhost', dnsNames: ['localhost'], ips: [host] });
      const srv = createHttpsServer({ cert: pair.certPem, key: pair.keyPem, ...(cfg.clientCa ? { ca: cfg.clientCa } : {}), requestCert: true, rejectUnauthorized: false }, handle(true));
      servers.push(srv);
      httpsPort = await listen(srv, cfg.securePort, cfg.bindAddress);
      log.info({ address: cfg.bindAddress, port: httpsPort }, 'serving health and metrics on HTTPS');
    }
  } catch (e) {
    for (const s of servers) s.close();
    throw e;
  }
  return {
    httpPort, httpsPort,
    setHealthy(ok, why = '') { healthy = ok; reason = why; },
    setReady(ok) { ready = ok; },
    close: () => closeServers(servers),
  };
}
