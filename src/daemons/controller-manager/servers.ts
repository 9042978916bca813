/**
 * The controller manager's HTTP endpoints: /healthz, /metrics and (with --profiling)
 * /debug/pprof/.
 *
 *  - `--port` (deprecated): plain HTTP on `--address`, no authentication, as Kubernetes had it.
 *  - `--secure-port` (when > 0): HTTPS on `--bind-address` with `--tls-cert-file`/key, or a
 *    self-signed pair kept in `--cert-dir`. /healthz is open; every other path is authenticated
 *    (client certificate of the coreconfig's CA, or a bearer token by TokenReview) and authorized
 *    by a SubjectAccessReview at the API server (src/auth/delegated.ts), as Kubernetes' delegated
 *    authentication and authorization do. --tls-min-version, --tls-cipher-suites and
 *    --tls-sni-cert-key (a serving pair per server name) apply as on the API server; the port
 *    speaks HTTP/2 (and HTTP/1.1) and advertises --http2-max-streams-per-connection streams
 *    (0 or less: 250, Go's default).
 *
 * Profiling (src/util/pprof.ts, shared with the API server): /debug/pprof/ lists what exists;
 * /debug/pprof/profile?seconds=N (at most 300) returns a V8 CPU profile (.cpuprofile JSON for
 * Chrome DevTools; not Go's pprof protobuf); /debug/pprof/heap a V8 heap snapshot on the secure
 * port only (it holds memory contents; the insecure port has no authentication); the other
 * Go profile names answer 501.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import * as http2 from 'node:http2';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { gateSecurePort, type DelegatedAccess } from '../../auth/delegated.js';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createSelfSignedServing } from '../../util/pki.js';
import { cipherList, minTlsVersion } from '../../util/tls-options.js';
import { buildSniMap, sniCallback } from '../../util/tls-sni.js';
import type { NamedCertKey } from '../../flags/value-lists.js';
import { listen, send, closeServers } from '../../util/http-serving.js';
import { servePprofPath } from '../../util/pprof.js';

export interface ServingConfig {
  address: string;
  port: number;
  bindAddress: string;
  securePort: number;
  certDir: string;
  tlsCertFile?: string | undefined;
  tlsPrivateKeyFile?: string | undefined;
  /** Go names, as --tls-min-version and --tls-cipher-suites take them. */
  tlsMinVersion?: string | undefined;
  tlsCipherSuites?: string[] | undefined;
  /** --tls-sni-cert-key: serving pairs chosen by the client's server name. */
  tlsSniCertKey?: readonly NamedCertKey[] | undefined;
  /** --http2-max-streams-per-connection; 0 or less: 250, Go's default. */
  http2MaxStreamsPerConnection?: number | undefined;
  profiling: boolean;
  /** CA that client certificates on the secure port must chain to. */
  clientCa?: Buffer | undefined;
  /** Delegated authentication and authorization of the secure port (TokenReview, SubjectAccessReview). */
  access?: DelegatedAccess | undefined;
}

export interface Servers {
  readonly registry: Registry;
  /** Bound ports (0 when that listener is off). */
  readonly httpPort: number;
  readonly httpsPort: number;
  /** Whether the controllers are healthy (false after leadership is lost). */
  setHealthy(ok: boolean, reason?: string): void;
  close(): Promise<void>;
}



export async function startServers(cfg: ServingConfig, log: Logger, signal: AbortSignal): Promise<Servers> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let healthy = true;
  let unhealthyReason = '';

  const handle = (secure: boolean) => (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') { send(res, 405, 'method not allowed\n'); return; }
    if (path === '/healthz' || path === '/healthz/') {
      if (healthy) send(res, 200, 'ok');
      else send(res, 500, `[-]controllers failed: ${unhealthyReason}\nhealthz check failed\n`);
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
    if (path === '/debug/pprof' || path.startsWith('/debug/pprof/')) {
      if (!cfg.profiling) { send(res, 404, '404 page not found\n'); return; }
      // A heap snapshot holds memory contents (keys, tokens): only for authorized callers.
      servePprofPath(path, url.searchParams, res, signal, secure);
      return;
    }
    send(res, 404, '404 page not found\n');
  };


  const servers: Server[] = [];
  /** The HTTP/2 listener's closer: stop listening, end its sessions (HTTP/2) and sockets (HTTP/1.1). */
  const secureClosers: (() => Promise<void>)[] = [];
  let httpPort = 0; let httpsPort = 0;
  try {
    if (cfg.port > 0) {
      const srv = createHttpServer(handle(false));
      servers.push(srv);
      httpPort = await listen(srv, cfg.port, cfg.address);
      log.warn({ address: cfg.address, port: httpPort }, 'serving insecurely on HTTP (--port is deprecated; use --secure-port)');
    }
    if (cfg.securePort > 0) {
      const pair = await servingPair(cfg);
      const ciphers = cipherList(cfg.tlsCipherSuites);
      const base: SecureContextOptions = { minVersion: minTlsVersion(cfg.tlsMinVersion), ...(ciphers ? { ciphers } : {}), ...(cfg.clientCa ? { ca: cfg.clientCa } : {}) };
      const maxStreams = cfg.http2MaxStreamsPerConnection ?? 0;
      const sni = await sniContexts(cfg.tlsSniCertKey ?? [], base);
      const srv = http2.createSecureServer({
        ...base, cert: pair.cert, key: pair.key, requestCert: true, rejectUnauthorized: false, allowHTTP1: true,
        settings: { maxConcurrentStreams: maxStreams > 0 ? maxStreams : 250 },
        ...(sni ? { SNICallback: sniCallback(sni, createSecureContext({ ...base, cert: pair.cert, key: pair.key })) } : {}),
      });
      // The compatibility API gives HTTP/2 and HTTP/1.1 requests the shape of node:http's.
      const h = handle(true);
      srv.on('request', (req, res) => h(req as unknown as IncomingMessage, res as unknown as ServerResponse));
      const open = new Set<{ destroy(): void }>();
      srv.on('secureConnection', (x: TLSSocket) => { open.add(x); x.once('close', () => open.delete(x)); });
      secureClosers.push(() => new Promise<void>((resolve) => { srv.close(() => resolve()); for (const x of open) x.destroy(); }));
      httpsPort = await listen(srv as unknown as Server, cfg.securePort, cfg.bindAddress);
      log.info({ address: cfg.bindAddress, port: httpsPort }, 'serving securely on HTTPS');
    }
  } catch (e) {
    for (const s of servers) s.close();
    for (const c of secureClosers) void c();
    throw e;
  }
  return {
    registry, httpPort, httpsPort,
    setHealthy(ok, reason = '') { healthy = ok; unhealthyReason = reason; },
    close: () => Promise.all([closeServers(servers), ...secureClosers.map((c) => c())]).then(() => undefined),
  };
}

/** One TLS context per --tls-sni-cert-key pair, keyed by the names it serves. */
async function sniContexts(list: readonly NamedCertKey[], base: SecureContextOptions): Promise<Map<string, ReturnType<typeof createSecureContext>> | undefined> {
  if (!list.length) return undefined;
  const entries = [];
  for (const item of list) {
    let cert: string, key: string;
    try {
      [cert, key] = await Promise.all([readFile(item.certFile, 'utf8'), readFile(item.keyFile, 'utf8')]);
    } catch (e) {
      throw new Error(`--tls-sni-cert-key: cannot read "${item.certFile}"/"${item.keyFile}": ${(e as Error).message}`);
    }
    try {
      entries.push({ names: item.names, certPem: cert, value: createSecureContext({ ...base, cert, key }) });
    } catch (e) {
      throw new Error(`--tls-sni-cert-key: invalid pair "${item.certFile}"/"${item.keyFile}": ${(e as Error).message}`);
    }
  }
  return buildSniMap(entries);
}

async function servingPair(cfg: ServingConfig): Promise<{ cert: string; key: string }> {
  if (cfg.tlsCertFile && cfg.tlsPrivateKeyFile) {
    return { cert: await readFile(cfg.tlsCertFile, 'utf8'), key: await readFile(cfg.tlsPrivateKeyFile, 'utf8') };
  }
  if (cfg.tlsCertFile || cfg.tlsPrivateKeyFile) throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
  const certFile = join(cfg.certDir, 'controller-manager.crt');
  const keyFile = join(cfg.certDir, 'controller-manager.key');
  try {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
  } catch { /* not made yet */ }
  const host = cfg.bindAddress === '0.0.0.0' || cfg.bindAddress === '::' ? '127.0.0.1' : cfg.bindAddress;
  const pair = await createSelfSignedServing({ host: 'localhost', dnsNames: ['localhost'], ips: [host] });
  await mkdir(cfg.certDir, { recursive: true, mode: 0o755 });
  await writeFile(certFile, pair.certPem, { mode: 0o644 });
  await writeFile(keyFile, pair.keyPem, { mode: 0o600 });
  return { cert: pair.certPem, key: pair.keyPem };
}
