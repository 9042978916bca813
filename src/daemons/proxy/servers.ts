/**
 * The proxy's two plain-HTTP listeners, as kube-proxy's:
 *  - --healthz-bind-address: /healthz (and /livez) answer 200 with a small JSON record while
 *    rule changes are programmed within two sync periods, 503 otherwise;
 *  - --metrics-bind-address: /metrics (Prometheus text) and /proxyMode.
 * An empty address switches a listener off; port 0 picks a free port (tests).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { splitHostPort } from '../../flags/proxy.js';
import { closeServers, listen, send } from '../../util/http-serving.js';
import type { NftProxier } from './proxier.js';

export interface ProxyServers {
  readonly healthzPort: number;
  readonly metricsPort: number;
  close(): Promise<void>;
}

function healthz(proxier: NftProxier, res: ServerResponse): void {
  const now = Date.now();
  const ok = proxier.healthy(now);
  const body = JSON.stringify({
    lastUpdated: new Date(proxier.lastSuccessAt || now).toISOString(),
    currentTime: new Date(now).toISOString(),
    nodeEligible: true,
  });
  send(res, ok ? 200 : 503, body, 'application/json');
}

export async function startProxyServers(cfg: { healthz: string; metrics: string; mode: string }, proxier: NftProxier, log: Logger): Promise<ProxyServers> {
  const servers: Server[] = [];
  const serve = async (addr: string, handler: (path: string, res: ServerResponse) => void, what: string): Promise<number> => {
    if (!addr) return 0;
    const { host, port } = splitHostPort(addr);
    const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') { send(res, 405, 'method not allowed\n'); return; }
      handler(new URL(req.url ?? '/', 'http://localhost').pathname, res);
    });
    servers.push(srv);
    const bound = await listen(srv, port, host || '0.0.0.0');
    log.info({ address: host || '0.0.0.0', port: bound }, `serving ${what}`);
    return bound;
  };
  try {
    const healthzPort = await serve(cfg.healthz, (path, res) => {
      if (path === '/healthz' || path === '/livez') healthz(proxier, res);
      else send(res, 404, '404 page not found\n');
    }, '/healthz');
    const metricsPort = await serve(cfg.metrics, (path, res) => {
      const reg = proxier.metrics.registry;
      if (path === '/metrics') reg.metrics().then((t) => send(res, 200, t, reg.contentType), (e: Error) => send(res, 500, `${e.message}\n`));
      else if (path === '/proxyMode') send(res, 200, cfg.mode);
      else if (path === '/healthz') healthz(proxier, res);
      else send(res, 404, '404 page not found\n');
    }, '/metrics');
    return { healthzPort, metricsPort, close: () => closeServers(servers) };
  } catch (e) {
    await closeServers(servers);
    throw e;
  }
}
