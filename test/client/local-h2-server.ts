/** A tiny cleartext HTTP/2 server for client tests that need scripted responses. */
import * as http2 from 'node:http2';

export interface Recorded { method: string; path: string; headers: http2.IncomingHttpHeaders; body: Buffer }
export type Responder = (req: Recorded, res: http2.Http2ServerResponse) => void;

export interface LocalServer { url: string; requests: Recorded[]; close(): Promise<void> }

export async function startLocalH2(responder: Responder): Promise<LocalServer> {
  const requests: Recorded[] = [];
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => { sessions.add(s); s.on('close', () => sessions.delete(s)); });
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const r: Recorded = { method: req.method, path: req.url, headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(r);
      responder(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`, requests,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sessions) s.destroy();
    }),
  };
}
