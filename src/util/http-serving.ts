/**
 * Small pieces the daemons' health/metrics/profiling listeners share: plain replies, listening
 * on a port.
 */
import type { Server, ServerResponse } from 'node:http';

/** Answers with a plain body (text by default) and no content sniffing. */
export function send(res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': type, 'x-content-type-options': 'nosniff' });
  res.end(body);
}

/** Listens and resolves with the bound port (useful with port 0); rejects on a bind error. */
export function listen(srv: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => { srv.off('error', reject); resolve((srv.address() as { port: number }).port); });
  });
}

/** Stops listening and drops open connections of every server; resolves when all are closed. */
export function closeServers(servers: readonly Server[]): Promise<void> {
  return Promise.all(servers.map((s) => new Promise<void>((resolve) => { s.close(() => resolve()); s.closeAllConnections(); }))).then(() => undefined);
}

/** What both response kinds offer (node:http's ServerResponse and the API server's HTTP/2 one), for handlers that stream a body. */
export interface StreamingResponse {
  statusCode: number;
  readonly writableEnded: boolean;
  setHeader(name: string, value: string): unknown;
  write(chunk: string | Uint8Array, cb: (err?: Error | null) => void): boolean;
  end(): unknown;
  end(chunk: string | Uint8Array): unknown;
}
