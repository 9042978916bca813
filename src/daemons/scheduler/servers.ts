/**
 * The scheduler's HTTP endpoints: /healthz, /livez, /readyz, /metrics and, with --profiling,
 * /debug/pprof/ (a V8 CPU profile at /debug/pprof/profile?seconds=N, JSON .cpuprofile).
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
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { DelegatedAccess } from '../../auth/delegated.js';
import type { Registry } from 'prom-client';
import { createSelfSignedServing } from '../../util/pki.js';
import { cpuProfile, listen, send, closeServers } from '../../util/http-serving.js';

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
    if (!secure) { serve(req, res, url, path); return; }
    if (!cfg.access) {
      if (!(req.socket as TLSSocket).authorized) { send(res, 401, 'Unauthorized: a client certificate signed by the cluster CA is required\n'); return; }
      serve(req, res, url, path);
      return;
    }
    cfg.access.check(req, path).then((r) => {
      if (r.ok) serve(req, res, url, path);
      else send(res, r.code, `${r.message}\n`);
    }, (e: Error) => send(res, 500, `${e.message}\n`));
  };

  const serve = (req: IncomingMessage, res: ServerResponse, url: URL, path: string): void => {
    if (path === '/metrics') {
      registry.metrics().then((text) => send(res, 200, text, registry.contentType), (e: Error) => send(res, 500, `${e.message}\n`));
      return;
    }
    if (cfg.profiling && path === '/debug/pprof') {
      send(res, 200, '<html><body><p>profiles:</p><ul><li><a href="profile">profile</a> (V8 CPU profile, JSON; ?seconds=N)</li></ul></body></html>\n', 'text/html; charset=utf-8');
      return;
    }
    if (cfg.profiling && path === '/debug/pprof/profile') {
      const s = Number(url.searchParams.get('seconds') ?? '30');
      if (!Number.isFinite(s) || s <= 0) { send(res, 400, 'seconds must be a positive number\n'); return; }
      const ac = new AbortController();
      res.on('close', () => ac.abort());
      signal.addEventListener('abort', () => ac.abort(), { once: true });
      cpuProfile(Math.min(s, 300), ac.signal).then(
        (body) => { if (!res.writableEnded) send(res, 200, body, 'application/json'); },
        (e: Error) => { if (!res.writableEnded) send(res, 500, `profiling failed: ${e.message}\n`); },
      );
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
